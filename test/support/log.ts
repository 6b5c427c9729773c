import { Writable } from "node:stream";
import { pino } from "pino";

/** A real pino logger whose JSON lines are kept in `lines` (for tests of what gets logged). */
export function captureLogger(level = "info") {
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk, _enc, cb) {
      lines.push(String(chunk));
      cb();
    },
  });
  return { log: pino({ level }, stream), lines };
}
