import { StringDecoder } from "node:string_decoder";

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
