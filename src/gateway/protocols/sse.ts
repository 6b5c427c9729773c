import { StringDecoder } from "node:string_decoder";
import { promptTokensEstimate } from "../budget-reservations.js";
import type { Meter, Units } from "../protocol.js";

/**
 * Splits a server-sent-event stream into lines as chunks arrive (a line, or a character, may span chunks). Only the
 * incomplete tail is kept between chunks.
 */
export class SseLines {
  private tail = "";
  private readonly decoder = new StringDecoder("utf8");

  push(chunk: Buffer): string[] {
    const text = this.tail + this.decoder.write(chunk);
    const lines = text.split("\n");
    this.tail = lines.pop() ?? "";
    // Bound the tail: a "line" longer than this is not an event we read.
    if (this.tail.length > 1_000_000) this.tail = "";
    return lines.map((l) => (l.endsWith("\r") ? l.slice(0, -1) : l));
  }
}

/**
 * A meter over an SSE answer's `data:` lines. `onData` sees each line and says whether it is output;
 * the first output line is the first token the caller waits for.
 */
export function sseDataMeter(onData: (line: string) => boolean, units: () => Units): Meter {
  const lines = new SseLines();
  let first = false;
  return {
    chunk(chunk) {
      let firstHere = false;
      for (const line of lines.push(chunk)) {
        if (line.startsWith("data:") && onData(line) && !first) first = firstHere = true;
      }
      return firstHere;
    },
    units,
  };
}

/** How one token-streaming protocol marks its output deltas and the event that carries usage. */
export interface TokenStream {
  isDelta(line: string): boolean;
  /** A cheap test on the raw line; only lines that pass are parsed. */
  carriesUsage(line: string): boolean;
  /** The usage of a parsed event, or null. */
  usage(event: unknown): Units | null;
}

/**
 * The meter of a token stream whose totals arrive in one event: each delta line counts one output
 * token; a line carrying usage is parsed for it. Cut off before the usage, the output is the deltas
 * counted and the input the prompt's characters / 4.
 */
export function sseTokenMeter(stream: TokenStream, promptChars: number): Meter {
  let usage: Units | null = null;
  let deltas = 0;
  return sseDataMeter(
    (line) => {
      if (stream.carriesUsage(line)) {
        try {
          usage = stream.usage(JSON.parse(line.slice(5))) ?? usage;
        } catch {
          // a malformed line is the upstream's problem; the estimate stands
        }
      }
      if (!stream.isDelta(line)) return false;
      deltas++;
      return true;
    },
    () => usage ?? { inputTokens: promptTokensEstimate(promptChars), outputTokens: deltas },
  );
}
