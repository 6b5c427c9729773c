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
  return storableBound(value, Number.POSITIVE_INFINITY) !== false;
}

/**
 * JSON.stringify(value).length <= max and isStorableJson(value), in one walk without the JSON text
 * where it can: storableBound's upper bound of the text's length within `max` is enough. Past it, or
 * for anything but plain JSON values (a toJSON method, a class instance, a bigint), it asks
 * JSON.stringify itself. A record's metadata was stringified here only to be measured: ~1 us per
 * record, every record of an OTLP export (docs/perf/ingest.md).
 */
export function jsonFits(value: unknown, max: number): boolean {
  const bound = storableBound(value, max);
  if (bound === false) return false;
  return bound <= max || (JSON.stringify(value).length <= max && isStorableJson(value));
}

/**
 * One walk of a JSON value (iterative): false at its first string or key that is not storable, else
 * an upper bound of its JSON text's length (a string's UTF-16 unit spelled \uXXXX at worst, a number
 * at most 32 characters, a missing value as null; Infinity once a value only JSON.stringify can
 * measure is met). The walk stops as soon as the bound passes `stopAbove` (a cycle's bound grows
 * without end): the bound is then answered, and what was not walked is unknown.
 */
function storableBound(value: unknown, stopAbove: number): number | false {
  let bound = 0;
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const v = stack.pop();
    if (typeof v === "string") {
      if (!isStorableText(v)) return false;
      bound += 2 + 6 * v.length;
    } else if (Array.isArray(v)) {
      bound += Object.getPrototypeOf(v) === Array.prototype ? 2 + v.length : Number.POSITIVE_INFINITY;
      for (let i = 0; i < v.length; i++) stack.push(v[i]);
    } else if (v !== null && typeof v === "object") {
      const proto = Object.getPrototypeOf(v);
      const plain = (proto === Object.prototype || proto === null) && typeof (v as { toJSON?: unknown }).toJSON !== "function";
      bound += plain ? 2 : Number.POSITIVE_INFINITY;
      // for…in, not Object.entries: no [key, value] array per property (every record's metadata passes here).
      for (const k in v) {
        if (!Object.hasOwn(v, k)) continue;
        if (!isStorableText(k)) return false;
        bound += 4 + 6 * k.length;
        stack.push((v as Record<string, unknown>)[k]);
      }
    } else {
      bound += v === null || v === undefined || typeof v === "number" || typeof v === "boolean" ? 32 : Number.POSITIVE_INFINITY;
    }
    if (bound > stopAbove) return bound;
  }
  return bound;
}

/**
 * The zod-free reading of each field type below, keyed by the zod type itself: a record schema built
 * from these types gets its fast validator derived from it (src/ingest/record-fast.ts), so a field
 * is declared once. A reading answers the value exactly as its type parses it, or REFUSED whenever
 * the type would refuse it (or, for a clock edge, might): then the schema decides and words why
 * (test/ingest/record-fast.test.ts holds every pair to the same answers).
 */
export const REFUSED: unique symbol = Symbol("refused");
export type FastReading = (v: unknown, now: number) => unknown;
/** By the type's definition, which `.describe()` copies share (the copy is another object). */
const FAST_READINGS = new WeakMap<object, FastReading>();

/** Declares a field type with the check that accepts exactly its values (it parses them unchanged). */
function fieldType<T extends z.ZodType>(type: T, check: (v: unknown) => boolean): T {
  FAST_READINGS.set(type._zod.def, (v) => (check(v) ? v : REFUSED));
  return type;
}

/** The zod-free reading of a type declared here, or undefined. */
export const fastReadingOf = (type: z.ZodType): FastReading | undefined => FAST_READINGS.get(type._zod.def);

const isNonNegative = (v: unknown, max: number) => typeof v === "number" && Number.isFinite(v) && v >= 0 && v <= max;
const isNonNegativeInt = (v: unknown, max: number) => Number.isSafeInteger(v) && (v as number) >= 0 && (v as number) <= max;

const storable = { message: "contains NUL or an unpaired surrogate" };
export const uuid = fieldType(z.string().regex(UUID_RE, "must be a UUID"), (v) => typeof v === "string" && UUID_RE.test(v));
export const shortText = fieldType(
  z.string().min(1).max(MAX_ID_LENGTH).refine(isStorableText, storable),
  (v) => typeof v === "string" && v.length >= 1 && v.length <= MAX_ID_LENGTH && isStorableText(v),
);
export const longText = fieldType(
  z.string().max(MAX_TEXT_LENGTH).refine(isStorableText, storable),
  (v) => typeof v === "string" && v.length <= MAX_TEXT_LENGTH && isStorableText(v),
);
export const nonNegative = fieldType(z.number().finite().nonnegative(), (v) => isNonNegative(v, Number.POSITIVE_INFINITY));
/** Dollars an agent reports (a sanity bound, not a business rule). */
export const usd = fieldType(nonNegative.max(1e9), (v) => isNonNegative(v, 1e9));
/** A count given as a float (generic units), rounded to the integer column it lands in. */
export const count = fieldType(nonNegative.max(Number.MAX_SAFE_INTEGER), (v) => isNonNegative(v, Number.MAX_SAFE_INTEGER));
/** A count that Postgres stores as integer (int4). */
export const int32 = fieldType(z.number().int().nonnegative().max(2_147_483_647), (v) => isNonNegativeInt(v, 2_147_483_647));
/** A count stored as bigint, kept within exact JS integers. */
export const int53 = fieldType(z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER), (v) => isNonNegativeInt(v, Number.MAX_SAFE_INTEGER));

/** A JSON object of at most MAX_METADATA_BYTES serialized, every string and key storable (a record's `metadata`). */
export const jsonObject = fieldType(
  z
    .record(z.string(), z.unknown())
    .refine((m) => JSON.stringify(m).length <= MAX_METADATA_BYTES, { message: `metadata larger than ${MAX_METADATA_BYTES} bytes` })
    .refine(isStorableJson, { message: "metadata contains NUL or an unpaired surrogate" }),
  (v) =>
    typeof v === "object" &&
    v !== null &&
    Object.getPrototypeOf(v) === Object.prototype &&
    !Object.hasOwn(v, "__proto__") &&
    jsonFits(v, MAX_METADATA_BYTES),
);

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
// Its zod-free reading (record-fast.ts): the same window, but a value within a minute of the clock edge goes
// to the schema, which decides on its own clock.
FAST_READINGS.set(epochMs._zod.def, (v, now) =>
  Number.isSafeInteger(v) && (v as number) >= MIN_EPOCH_MS && (v as number) <= Math.min(MAX_EPOCH_MS, now + MAX_FUTURE_SKEW_MS - 60_000) ? v : REFUSED,
);

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

/**
 * flexibleTimestamp's reading without zod. A minute inside the future-skew edge it refuses, so the
 * schema decides there (its clock is read later).
 */
function readTimestamp(v: unknown, now: number): Date | typeof REFUSED {
  let ms: number;
  if (typeof v === "number") {
    if (!Number.isFinite(v)) return REFUSED;
    ms = Math.abs(v) < SECONDS_MS_BOUNDARY ? v * 1000 : v;
  } else if (typeof v === "string" && v.length <= 64) ms = Date.parse(v);
  else return REFUSED;
  if (!Number.isFinite(ms) || ms < MIN_EPOCH_MS || ms > Math.min(MAX_EPOCH_MS, now + MAX_FUTURE_SKEW_MS - 60_000)) return REFUSED;
  return new Date(Math.round(ms));
}
FAST_READINGS.set(flexibleTimestamp._zod.def, readTimestamp);

/** The first zod issue as "path: message", for per-row skip reasons. */
export function firstIssue(error: z.ZodError): string {
  const issue = error.issues[0];
  if (!issue) return "invalid row";
  const path = issue.path.map(String).join(".");
  return path ? `${path}: ${issue.message}` : issue.message;
}
