import type { z } from "zod";
import { type FastReading, fastReadingOf, MAX_EPOCH_MS, MAX_FUTURE_SKEW_MS, MIN_EPOCH_MS, REFUSED } from "./fields.js";

/**
 * The zod-free validator of a record schema, derived from the schema itself: each key's reading comes
 * from its zod type (the field types of fields.ts carry theirs; enums, booleans, unions and
 * optional/nullable wrappers are read from the type's definition). zod costs ≈ 10% of the collector's
 * CPU per batch; this answers a record exactly as the schema would parse it, or null whenever anything
 * is unusual or wrong, and the caller then runs the schema, which decides and words the reason. So
 * it is never laxer than the schema, and there is one declaration of each field: the schema
 * (test/ingest/record-fast.test.ts checks both agree on valid and invalid records). A key whose type
 * has no reading (a field type declared outside fields.ts) makes every record naming it go to the
 * schema: new fields are never dropped.
 */
export interface FastValidator<R> {
  /** Untrusted input (JSON of POST /v1/ingest): the parsed record, or null (ask the schema). */
  parse(raw: unknown, now?: number): R | null;
  /**
   * parse without the copy: null when parse answers null, else the values a reading changed (a
   * timestamp's Date), by key; every other key parse keeps has its value in `raw` itself (unknown
   * keys are still there: the caller reads the schema's keys only).
   */
  read(raw: unknown, now?: number): Record<string, unknown> | null;
  /**
   * A record built in process, already of the schema's shape (`timestamp` a Date or epoch ms): whether
   * every value passes its field's rule (lengths, bounds, storable text), without copying it.
   */
  check(record: object, now?: number): boolean;
  /** The keys with a zod-free reading (all of the schema's when every field type is declared in fields.ts). */
  readonly keys: ReadonlySet<string>;
}

interface Field {
  read: FastReading;
  required: boolean;
}

/** Builds the validator of an object schema's shape (once, at module load). */
export function fastValidator<R>(shape: Record<string, z.ZodType>): FastValidator<R> {
  const fields = new Map<string, Field>();
  const unread = new Set<string>();
  for (const [key, type] of Object.entries(shape)) {
    const field = fieldOf(type);
    if (field) fields.set(key, field);
    else unread.add(key);
  }
  const required = [...fields].filter(([, f]) => f.required).map(([k]) => k);

  /** The record as the schema would parse it: the schema's keys of `raw`, each with its reading (read, then copied). */
  function parse(raw: unknown, now = Date.now()): R | null {
    const changed = read(raw, now);
    if (changed === null) return null;
    const o = raw as Record<string, unknown>;
    const record: Record<string, unknown> = {};
    for (const key in o) if (fields.has(key)) record[key] = Object.hasOwn(changed, key) ? changed[key] : o[key];
    return record as R;
  }

  function read(raw: unknown, now = Date.now()): Record<string, unknown> | null {
    if (raw === null || typeof raw !== "object" || Object.getPrototypeOf(raw) !== Object.prototype) return null;
    const o = raw as Record<string, unknown>;
    const changed: Record<string, unknown> = {};
    // One pass over the keys the record has (a gateway record has ~10 of the 30 optional ones): each is
    // read by its rule; unknown keys are passed over, as zod drops them. Looking up every optional key
    // by name instead was ~10 % of ingest's CPU (megamorphic keyed loads).
    for (const key in o) {
      const v = o[key];
      const field = fields.get(key);
      if (field === undefined) {
        if (v != null && unread.has(key)) return null;
        continue;
      }
      if (v == null && !field.required) continue;
      const out = field.read(v, now);
      if (out === REFUSED) return null;
      if (out !== v) changed[key] = out;
    }
    // A required key's reading refuses null, so present here means read and valid.
    for (const key of required) if (!Object.hasOwn(o, key)) return null;
    return changed;
  }

  function check(record: object, now = Date.now()): boolean {
    const o = record as Record<string, unknown>;
    for (const key in o) {
      const v = o[key];
      if (key === "timestamp") {
        const ms = v instanceof Date ? v.getTime() : v;
        if (typeof ms !== "number" || !(ms >= MIN_EPOCH_MS && ms <= Math.min(MAX_EPOCH_MS, now + MAX_FUTURE_SKEW_MS - 60_000))) return false;
        continue;
      }
      const field = fields.get(key);
      if (field === undefined) {
        if (v != null && unread.has(key)) return false;
        continue;
      }
      if (v == null) {
        if (field.required) return false;
        continue;
      }
      if (field.read(v, now) === REFUSED) return false;
    }
    for (const key of required) if (o[key] == null) return false;
    return true;
  }

  return { parse, read, check, keys: new Set(fields.keys()) };
}

/** A key's reading from its zod type, or null when the type has none. */
function fieldOf(type: z.ZodType): Field | null {
  let t = type;
  let required = true;
  for (;;) {
    const def = t._zod.def as { type: string; innerType?: z.ZodType };
    if ((def.type === "optional" || def.type === "nullable") && def.innerType) {
      required = false;
      t = def.innerType;
    } else break;
  }
  const read = readingOf(t);
  return read ? { read, required } : null;
}

function readingOf(t: z.ZodType): FastReading | null {
  const declared = fastReadingOf(t);
  if (declared) return declared;
  const def = t._zod.def as { type: string; entries?: Record<string, unknown>; options?: z.ZodType[]; checks?: unknown[] };
  if (def.checks?.length) return null; // a refinement only zod knows
  if (def.type === "boolean") return (v) => (typeof v === "boolean" ? v : REFUSED);
  if (def.type === "enum" && def.entries) {
    const values = new Set(Object.values(def.entries));
    return (v) => (values.has(v) ? v : REFUSED);
  }
  if (def.type === "union" && def.options) {
    const reads = def.options.map(readingOf);
    if (reads.some((r) => r === null)) return null;
    return (v, now) => {
      for (const r of reads) {
        const out = (r as FastReading)(v, now);
        if (out !== REFUSED) return out;
      }
      return REFUSED;
    };
  }
  return null;
}
