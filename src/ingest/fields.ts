import { z } from "zod";
import { isStorableText } from "../http/storable.js";

/** Shared field rules for telemetry rows: bounded strings, finite non-negative numbers, sane clocks. */

/** A record id: any-case UUID (stored lower-cased). No `i` flag: the OpenAPI document carries the pattern's source only. */
export const UUID_RE = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;

export const MAX_ID_LENGTH = 256;
export const MAX_TEXT_LENGTH = 4096;
/** Serialized size cap of a request record's `metadata` object. */
export const MAX_METADATA_BYTES = 16 * 1024;

/** Epoch-ms window accepted for `_ms` fields: seconds- and microseconds-scale values fall outside. */
export const MIN_EPOCH_MS = Date.UTC(2000, 0, 1);
export const MAX_EPOCH_MS = Date.UTC(2100, 0, 1);
/**
 * How far ahead of the collector's clock a row may be dated (agent clock skew). Spend windows end at
 * now, so a row dated further ahead would count in no window yet and surprise every one later.
 */
export const MAX_FUTURE_SKEW_MS = 5 * 60 * 1000;
const SKEW_TEXT = `more than ${MAX_FUTURE_SKEW_MS / 60_000} minutes ahead of the collector's clock (the clock-skew allowance)`;
/** Below this magnitude a numeric timestamp is epoch seconds; at or above, epoch ms (docs/api/ingest.md). */
export const SECONDS_MS_BOUNDARY = 1e11;

export { isStorableText };

/** Every string and key inside a JSON value is storable (iterative: no recursion on hostile input). */
export function isStorableJson(value: unknown): boolean {
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const v = stack.pop();
    if (typeof v === "string") {
      if (!isStorableText(v)) return false;
    } else if (v !== null && typeof v === "object") {
      for (const [k, child] of Object.entries(v)) {
        if (!isStorableText(k)) return false;
        stack.push(child);
      }
    }
  }
  return true;
}

const storable = { message: "contains NUL or an unpaired surrogate" };
export const shortText = z.string().min(1).max(MAX_ID_LENGTH).refine(isStorableText, storable);
export const longText = z.string().max(MAX_TEXT_LENGTH).refine(isStorableText, storable);
export const nonNegative = z.number().finite().nonnegative();
/** A count that Postgres stores as integer (int4). */
export const int32 = z.number().int().nonnegative().max(2_147_483_647);
/** A count stored as bigint, kept within exact JS integers. */
export const int53 = z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER);

/**
 * Epoch milliseconds: an integer in [2000-01-01, collector clock + the skew allowance]. Seconds-scale values
 * fall below the window and microseconds-scale values far above it, so both are rejected.
 */
export const epochMs = z
  .number()
  .int("must be an integer of epoch milliseconds")
  .superRefine((v, ctx) => {
    if (v < MIN_EPOCH_MS) ctx.addIssue({ code: "custom", message: "must be epoch milliseconds (this looks like seconds, or is before 2000)" });
    else if (v > MAX_EPOCH_MS) ctx.addIssue({ code: "custom", message: "must be epoch milliseconds (this looks like microseconds)" });
    else if (v > Date.now() + MAX_FUTURE_SKEW_MS) ctx.addIssue({ code: "custom", message: `is ${SKEW_TEXT}` });
  })
  .describe("integer epoch milliseconds from 2000-01-01 to the collector's clock + 5 minutes");

/** ISO-8601 string, or epoch seconds (< 1e11) / epoch ms as a number; bounded to [2000, now + skew]. */
export const flexibleTimestamp = z.union([z.string().max(64), z.number().finite()]).transform((value, ctx) => {
  const ms = typeof value === "number" ? (Math.abs(value) < SECONDS_MS_BOUNDARY ? value * 1000 : value) : Date.parse(value);
  if (!Number.isFinite(ms)) {
    ctx.addIssue({ code: "custom", message: "not an ISO-8601 timestamp or epoch number" });
    return z.NEVER;
  }
  if (ms < MIN_EPOCH_MS) {
    ctx.addIssue({ code: "custom", message: "timestamp out of range (before 2000)" });
    return z.NEVER;
  }
  if (ms > Date.now() + MAX_FUTURE_SKEW_MS) {
    ctx.addIssue({ code: "custom", message: `timestamp is ${SKEW_TEXT}` });
    return z.NEVER;
  }
  return new Date(Math.round(ms));
});

/** The first zod issue as "path: message", for per-row skip reasons. */
export function firstIssue(error: z.ZodError): string {
  const issue = error.issues[0];
  if (!issue) return "invalid row";
  const path = issue.path.map(String).join(".");
  return path ? `${path}: ${issue.message}` : issue.message;
}
