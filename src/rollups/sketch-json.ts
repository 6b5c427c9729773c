import { type SQL, sql } from "drizzle-orm";
import { addBuckets, bucketsComplete, bucketsOf, completeBuckets, EXACT_SAMPLE_LIMIT, emptySketch, type LatencySketch } from "../stats/summary.js";

/** Reads a stored sketch back; anything malformed counts as empty rather than failing a report. */
export function sketchFromJson(value: unknown): LatencySketch {
  const sketch = emptySketch();
  mergeStoredSketch(sketch, value);
  completeBuckets(sketch); // the whole sketch, buckets included, not a page's partial merge
  return sketch;
}

/**
 * mergeSketch(into, sketchFromJson(value)) without building the intermediate sketch, for an
 * accumulator the caller owns (its samples array is its own: they are appended in place). A fleet-index
 * page merges one stored sketch per agent, day and modality, most of them empty or of a few samples:
 * the copies (a concatenated array per merge) and throwaway objects were most of its Node CPU. While
 * the merge stays exact the stored buckets are not added (summary.ts LatencySketch): `into`'s are
 * rebuilt from its samples if it ever leaves exactness.
 */
export function mergeStoredSketch(into: LatencySketch, value: unknown): void {
  if (value === null || value === undefined) return;
  const raw = typeof value === "string" ? (JSON.parse(value) as unknown) : value;
  if (raw === null || typeof raw !== "object") return;
  const o = raw as Record<string, unknown>;
  const num = (v: unknown, dflt: number) => (typeof v === "number" && Number.isFinite(v) ? v : dflt);
  const count = num(o.count, 0);
  if (count <= 0) return;
  const packed = o.packed_samples !== undefined;
  const samples = packed ? unpackSamples(o.packed_samples, count) : storedSamples(o.samples, count);
  if (into.samples && samples && into.count + count <= EXACT_SAMPLE_LIMIT) {
    // Exact: the samples are the answer; the buckets are left out (summary.ts LatencySketch).
    // Unpacked samples are a fresh array: taken as they are, not copied.
    if (into.samples.length === 0) into.samples = packed ? samples : samples.slice();
    else for (const v of samples) into.samples.push(v);
  } else {
    completeBuckets(into);
    into.samples = null;
    // Stored buckets are complete (rollup rows; packedSketch writes none for an exact sketch); a packed
    // cache's are counted from its samples, or unpacked if its samples did not decode.
    if (o.buckets && typeof o.buckets === "object") addBuckets(into.buckets, o.buckets as Record<string, unknown>);
    else if (samples) addBuckets(into.buckets, bucketsOf(samples));
    else addBuckets(into.buckets, unpackBuckets(o.packed_buckets));
  }
  into.count += count;
  into.sum += num(o.sum, 0);
  into.min = Math.min(into.min, num(o.min, Number.POSITIVE_INFINITY));
  into.max = Math.max(into.max, num(o.max, Number.NEGATIVE_INFINITY));
  into.zeros += num(o.zeros, 0);
}

/** A stored sketch's raw samples when complete (every one a finite number, as many as its count), else null. */
export function storedSamples(value: unknown, count: number): number[] | null {
  if (!Array.isArray(value) || value.length !== count) return null;
  return value.every((v) => typeof v === "number" && Number.isFinite(v)) ? (value as number[]) : null;
}

/**
 * A sketch as a cache stores it (the span and month sketch caches of GET /api/agents, written and read
 * by Node only, never merged in SQL): its exact samples as one base64 string of little-endian float64s
 * (`packed_samples`) instead of a JSON array, and its buckets packed too (`packed_buckets`), read only
 * if the samples fail to decode (summary.ts LatencySketch: an exact sketch's samples give them back). A page of `period=all` reads 400 cached sketches of ~340 samples:
 * parsing and merging them was most of Node's time there (a 342-sample sketch: JSON 13.7 µs to parse,
 * packed without buckets ~3 µs), and Postgres no longer prints ~170k jsonb numbers per page.
 * A replica older than this form reads such a cache as a sketch without samples or buckets (its p95
 * clamped to min/max) until it is upgraded: the collector's replicas are upgraded together.
 */
export function packedSketch(sketch: LatencySketch): Partial<LatencySketch> & { packed_samples?: string; packed_buckets?: string } {
  const { samples, buckets, ...rest } = sketch;
  if (!samples) return { ...rest, buckets };
  // Complete: a page's merge may have left them partial.
  const full = bucketsComplete(sketch) ? buckets : bucketsOf(samples);
  const pairs: number[] = [];
  for (const k in full) pairs.push(Number(k), full[k] as number);
  return { ...rest, packed_samples: pack(samples), packed_buckets: pack(pairs) };
}

const pack = (values: readonly number[]) => Buffer.from(Float64Array.from(values).buffer).toString("base64");

/** A packed string's float64s, or null when it is not one. */
function unpack(value: unknown): Float64Array | null {
  if (typeof value !== "string") return null;
  const bytes = Buffer.from(value, "base64");
  if (bytes.length % 8 !== 0) return null;
  // Copied into an aligned buffer: a decoded Buffer may sit at any offset of Node's pool.
  const floats = new Float64Array(bytes.length / 8);
  new Uint8Array(floats.buffer).set(bytes);
  return floats;
}

/** packed_buckets back to a bucket record (pairs of index and count). */
function unpackBuckets(value: unknown): Record<string, number> {
  const pairs = unpack(value);
  const out: Record<string, number> = {};
  if (!pairs) return out;
  for (let i = 0; i + 1 < pairs.length; i += 2) out[String(pairs[i])] = pairs[i + 1] as number;
  return out;
}

/** packed_samples back to numbers when complete (as many finite values as the count), else null. */
export function unpackSamples(value: unknown, count: number): number[] | null {
  const floats = unpack(value);
  if (!floats || floats.length !== count) return null;
  const out = new Array<number>(count);
  for (let i = 0; i < count; i++) {
    const v = floats[i] as number;
    if (!Number.isFinite(v)) return null;
    out[i] = v;
  }
  return out;
}

/**
 * SQL that merges two stored sketches (either may be null) exactly as mergeSketch does: buckets add,
 * raw samples concatenate while both have them and the merged count is within EXACT_SAMPLE_LIMIT.
 */
export function mergeSketchSql(a: SQL, b: SQL): SQL {
  return sql`CASE WHEN ${a} IS NULL THEN ${b} WHEN ${b} IS NULL THEN ${a} ELSE jsonb_build_object(
    'count', (${a}->>'count')::numeric + (${b}->>'count')::numeric,
    'sum', (${a}->>'sum')::float8 + (${b}->>'sum')::float8,
    'min', least((${a}->>'min')::float8, (${b}->>'min')::float8),
    'max', greatest((${a}->>'max')::float8, (${b}->>'max')::float8),
    'zeros', (${a}->>'zeros')::numeric + (${b}->>'zeros')::numeric,
    'samples', CASE WHEN jsonb_typeof(${a}->'samples') = 'array' AND jsonb_typeof(${b}->'samples') = 'array'
      AND (${a}->>'count')::numeric + (${b}->>'count')::numeric <= ${sql.raw(String(EXACT_SAMPLE_LIMIT))}
      THEN (${a}->'samples') || (${b}->'samples') END,
    'buckets', (SELECT coalesce(jsonb_object_agg(k, n), '{}'::jsonb) FROM (
      SELECT key AS k, sum(value::numeric) AS n FROM (
        SELECT * FROM jsonb_each_text(${a}->'buckets') UNION ALL SELECT * FROM jsonb_each_text(${b}->'buckets')
      ) u GROUP BY key) g)
  ) END`;
}
