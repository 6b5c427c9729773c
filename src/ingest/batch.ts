import type { Context } from "hono";
import { DomainError } from "../errors.js";
import { decodeUtf8, JSON_MAX_DEPTH, JSON_MAX_VALUES, parseJsonText, readBodyBytes } from "../http/body.js";

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
  /** Values as jsonBoundsProblem counts them (containers and commas outside strings), so far. */
  values: number;
  /**
   * The scan read one whole JSON value (its brackets balanced) followed by white space only: `depth`
   * and `values` are then those of the whole text.
   */
  whole: boolean;
}

/**
 * One pass over the raw text, before JSON.parse: is it an array, how many top-level elements,
 * how deep, how many values. Stops as soon as a limit is crossed, so a 10k-element or deeply nested
 * body never costs a full parse. Malformed text is left for JSON.parse to report.
 */
export function scanTopLevelArray(text: string, cap = INGEST_BATCH_CAP, maxDepth = INGEST_MAX_DEPTH): ArrayScan {
  let i = 0;
  const n = text.length;
  while (i < n && isSpace(text.charCodeAt(i))) i++;
  const isArray = text.charCodeAt(i) === 0x5b; /* [ */
  let depth = 0;
  let deepest = 0;
  let count = 0;
  let values = 0;
  let sawElement = false;
  let closed = false;
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
      values++;
      depth++;
      if (depth > deepest) {
        deepest = depth;
        if (deepest > maxDepth) break;
      }
    } else if (ch === 0x5d || ch === 0x7d /* ] } */) {
      depth--;
      if (depth === 0) {
        closed = true;
        break;
      }
    } else if (ch === 0x2c /* , */) {
      values++;
      if (isArray && depth === 1) sawElement = false;
    } else if (isArray && depth === 1 && !sawElement && !isSpace(ch)) {
      sawElement = true;
      count++;
    }
    if (count > cap) break;
  }
  let whole = closed;
  for (i++; whole && i < n; i++) if (!isSpace(text.charCodeAt(i))) whole = false;
  return { isArray, count: isArray ? count : 0, depth: deepest, values, whole };
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
  // A whole value within parseJsonText's bounds (depth ≤ INGEST_MAX_DEPTH < JSON_MAX_DEPTH) is parsed
  // without its second scan for them (~0.5-0.8 ms per 500 records); anything else goes the full way.
  const parsed = parseJsonText(text, scan.whole && scan.values <= JSON_MAX_VALUES && scan.depth <= JSON_MAX_DEPTH);
  if (!Array.isArray(parsed)) {
    throw new DomainError("validation_failed", "the body must be a JSON array of rows (not wrapped in an object)", [
      { path: "(body)", message: "expected array" },
    ]);
  }
  return parsed;
}
