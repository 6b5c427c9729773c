import type { Context } from "hono";
import { DomainError } from "../errors.js";
import { decodeUtf8, parseJsonText, readBodyBytes } from "../http/body.js";

/** Largest number of rows in one ingest, turns or dead-air batch (docs/api/ingest.md). */
export const INGEST_BATCH_CAP = 1000;
/** Deepest JSON nesting a batch may have; rows are flat objects, metadata a few levels deep. */
export const INGEST_MAX_DEPTH = 32;

export interface ArrayScan {
  isArray: boolean;
  /** Top-level elements counted so far (stops counting past the cap). */
  count: number;
  /** Deepest nesting seen (stops scanning past the limit). */
  depth: number;
}

/**
 * One pass over the raw text, before JSON.parse: is it an array, how many top-level elements,
 * how deep. Stops as soon as a limit is crossed, so a 10k-element or deeply nested body never
 * costs a full parse. Malformed text is left for JSON.parse to report.
 */
export function scanTopLevelArray(text: string, cap = INGEST_BATCH_CAP, maxDepth = INGEST_MAX_DEPTH): ArrayScan {
  let i = 0;
  const n = text.length;
  while (i < n && isSpace(text.charCodeAt(i))) i++;
  const isArray = text.charCodeAt(i) === 0x5b; /* [ */
  let depth = 0;
  let deepest = 0;
  let count = 0;
  let sawElement = false;
  for (; i < n; i++) {
    const ch = text.charCodeAt(i);
    if (ch === 0x22 /* " */) {
      if (isArray && depth === 1 && !sawElement) {
        sawElement = true;
        count++;
      }
      i = endOfString(text, i);
      continue;
    }
    if (ch === 0x5b || ch === 0x7b /* [ { */) {
      if (isArray && depth === 1 && !sawElement) {
        sawElement = true;
        count++;
      }
      depth++;
      if (depth > deepest) {
        deepest = depth;
        if (deepest > maxDepth) break;
      }
    } else if (ch === 0x5d || ch === 0x7d /* ] } */) {
      depth--;
      if (depth === 0) break;
    } else if (isArray && depth === 1) {
      if (ch === 0x2c /* , */) {
        sawElement = false;
      } else if (!sawElement && !isSpace(ch)) {
        sawElement = true;
        count++;
      }
    }
    if (count > cap) break;
  }
  return { isArray, count: isArray ? count : 0, depth: deepest };
}

/** Index of the quote closing the string that opens at `open` (jumps with indexOf, skips escapes). */
function endOfString(text: string, open: number): number {
  let q = text.indexOf('"', open + 1);
  while (q !== -1) {
    let backslashes = 0;
    for (let j = q - 1; text.charCodeAt(j) === 0x5c; j--) backslashes++;
    if (backslashes % 2 === 0) return q;
    q = text.indexOf('"', q + 1);
  }
  return text.length;
}

function isSpace(ch: number): boolean {
  return ch === 0x20 || ch === 0x0a || ch === 0x0d || ch === 0x09;
}

/**
 * Reads a telemetry batch: size limit while reading (gzip-aware), strict UTF-8, the batch cap and
 * depth limit checked on the raw text, then JSON.parse. A body that is not a JSON array is a 422.
 */
export async function readBatch(c: Context, limitBytes: number): Promise<unknown[]> {
  const text = decodeUtf8(await readBodyBytes(c, limitBytes));
  const scan = scanTopLevelArray(text);
  if (scan.isArray && scan.count > INGEST_BATCH_CAP) {
    throw new DomainError("payload_too_large", `a batch holds at most ${INGEST_BATCH_CAP} rows`, {
      batch_cap: INGEST_BATCH_CAP,
    });
  }
  if (scan.depth > INGEST_MAX_DEPTH) {
    throw new DomainError("validation_failed", `JSON nested deeper than ${INGEST_MAX_DEPTH} levels`, {
      max_depth: INGEST_MAX_DEPTH,
    });
  }
  const parsed = parseJsonText(text);
  if (!Array.isArray(parsed)) {
    throw new DomainError("validation_failed", "the body must be a JSON array of rows (not wrapped in an object)", [
      { path: "(body)", message: "expected array" },
    ]);
  }
  return parsed;
}
