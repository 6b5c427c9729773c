import { type SQL, sql } from "drizzle-orm";
import { addBuckets, bucketsComplete, bucketsOf, completeBuckets, EXACT_SAMPLE_LIMIT, emptySketch, type LatencySketch, SKETCH_RELATIVE_ACCURACY } from "../stats/summary.js";

const LN_GAMMA = sql.raw(String(Math.log((1 + SKETCH_RELATIVE_ACCURACY) / (1 - SKETCH_RELATIVE_ACCURACY))));

/** A positive sample's sketch bucket index in SQL: addSample's ceil(ln v / ln γ) (src/stats/summary.ts). */
export function sketchBucketSql(value: SQL): SQL {
  return sql`ceil(ln(${value}) / ${LN_GAMMA}::float8)::int`;
}

/** Where decodeCachedSketch leaves the samples it decoded: a fresh, checked array mergeStoredSketch takes as it is. */
const DECODED = Symbol("decoded samples");

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
  const decoded = (o as { [DECODED]?: number[] })[DECODED];
  const packed = decoded !== undefined || o.packed_samples !== undefined || o.packed_centis !== undefined;
  const samples =
    decoded ??
    (o.packed_centis !== undefined ? unpackCentis(o.packed_centis, count) : packed ? unpackSamples(o.packed_samples, count) : storedSamples(o.samples, count));
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
 * by Node only, never merged in SQL). Exact samples at the reported precision (the span cache:
 * atReportedPrecision) go as `packed_centis` (packCentis), with no buckets: their samples give them back
 * (summary.ts LatencySketch). Other exact samples (the month caches keep full precision) go as one base64
 * string of little-endian float64s (`packed_samples`) with their buckets packed too (`packed_buckets`),
 * read only if the samples fail to decode. A page of `period=all` reads 400 cached sketches of ~340
 * samples: as JSON arrays, parsing them was most of Node's time there (a 342-sample sketch: JSON 13.7 µs
 * to parse, packed ~3 µs); as float64s with buckets, 2.2 MB of jsonb a page; as centis, ~0.35 MB.
 * A replica older than a form reads such a cache as a sketch without samples or buckets (its p95
 * clamped to min/max) until it is upgraded: the collector's replicas are upgraded together.
 */
export function packedSketch(sketch: LatencySketch): Partial<LatencySketch> & { packed_samples?: string; packed_centis?: string; packed_buckets?: string } {
  const { samples, buckets, ...rest } = sketch;
  if (!samples) return { ...rest, buckets };
  // Complete: a page's merge may have left them partial.
  const full = bucketsComplete(sketch) ? buckets : bucketsOf(samples);
  const pairs: number[] = [];
  for (const k in full) pairs.push(Number(k), full[k] as number);
  const centis = packCentis(samples);
  return { ...rest, ...(centis === null ? { packed_samples: pack(samples), packed_buckets: pack(pairs) } : { packed_centis: centis }) };
}

const pack = (values: readonly number[]) => Buffer.from(Float64Array.from(values).buffer).toString("base64");

/** Most centi-ms a uint32 holds (≈ 11.9 hours). */
const MAX_CENTIS = 0xffff_ffff;

/**
 * Samples at the reported precision (each a whole number of 0.01 ms from 0 to MAX_CENTIS) as centi-ms,
 * ~2 bytes a sample where a float64 takes 8. The `period=all` page's span caches were 2.2 MB of jsonb
 * whose detoast, printing and parsing were most of that page's time (docs/PERFORMANCE.md). Null when
 * any sample is not such a value.
 */
function packCentis(samples: readonly number[]): string | null {
  // Each value as the zigzag LEB128 varint of its difference from the one before: the caches store
  // their samples sorted, so most differences take 1-2 bytes instead of a float64's 8.
  const out = Buffer.allocUnsafe(samples.length * 6);
  let n = 0;
  let prev = 0;
  for (const v of samples) {
    const c = Math.round(v * 100);
    if (!(c >= 0 && c <= MAX_CENTIS && c / 100 === v)) return null;
    let z = c >= prev ? (c - prev) * 2 : (prev - c) * 2 - 1;
    prev = c;
    while (z >= 0x80) {
      out[n++] = (z % 0x80) | 0x80;
      z = Math.floor(z / 0x80);
    }
    out[n++] = z;
  }
  return out.toString("base64", 0, n);
}

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
 * A cached sketch as mergeStoredSketch reads it with its packed_centis decoded into `samples`, the value
 * itself when it has none, or undefined when they do not decode. A centis cache carries no buckets to
 * fall back on, so its reader treats such a row as stale and merges it again (src/fleet/span-sketches.ts).
 */
export function decodeCachedSketch(value: unknown): unknown {
  const raw = typeof value === "string" ? (JSON.parse(value) as unknown) : value;
  if (raw === null || typeof raw !== "object" || !("packed_centis" in raw)) return raw;
  const o = raw as Record<string, unknown>;
  const samples = unpackCentis(o.packed_centis, typeof o.count === "number" ? o.count : -1);
  return samples === null ? undefined : { ...o, [DECODED]: samples };
}

/** packed_centis back to numbers when complete (exactly `count` values, each from 0 to MAX_CENTIS), else null. */
function unpackCentis(value: unknown, count: number): number[] | null {
  if (typeof value !== "string") return null;
  if (!Number.isInteger(count) || count < 0) return null;
  const bytes = Buffer.from(value, "base64");
  const out = new Array<number>(count);
  let i = 0;
  let prev = 0;
  for (let k = 0; k < count; k++) {
    let z = 0;
    let scale = 1;
    for (;;) {
      if (i >= bytes.length || scale > 2 ** 35) return null;
      const b = bytes[i++] as number;
      z += (b & 0x7f) * scale;
      if (b < 0x80) break;
      scale *= 0x80;
    }
    // Zigzag: even = +z/2, odd = -(z+1)/2.
    prev += z % 2 === 0 ? z / 2 : -(z + 1) / 2;
    if (prev < 0 || prev > MAX_CENTIS) return null;
    out[k] = prev / 100;
  }
  return i === bytes.length ? out : null;
}

/**
 * SQL that merges two stored sketches (either may be null) exactly as mergeSketch does: buckets add,
 * raw samples concatenate while both have them and the merged count is within EXACT_SAMPLE_LIMIT.
 * A batch's sketch may carry `"samples": false` instead of its samples when its writer knew the merge
 * drops them (src/rollups/sketch-json.ts); should the merge keep samples after all, it answers
 * `"samples": false`, which leftOutSamplesSql finds before the transaction commits.
 * The buckets: `a`'s object with `b`'s keys added in (`||` keeps the right side's value of a key
 * both hold), walking only `b`'s keys and looking each up in `a`. Callers pass the stored sketch
 * as `a` and a batch's as `b`, which holds the fewer buckets. Grouping the union of both sides' keys
 * instead cost 3-4 x as much per merge (a stored sketch of 20-60 buckets and a 167-sample batch's:
 * 200-270 vs 55-70 us, docs/perf/ingest.md).
 */
export function mergeSketchSql(a: SQL, b: SQL): SQL {
  return sql`CASE WHEN ${a} IS NULL THEN ${b} WHEN ${b} IS NULL THEN ${a} ELSE jsonb_build_object(
    'count', (${a}->>'count')::numeric + (${b}->>'count')::numeric,
    'sum', (${a}->>'sum')::float8 + (${b}->>'sum')::float8,
    'min', least((${a}->>'min')::float8, (${b}->>'min')::float8),
    'max', greatest((${a}->>'max')::float8, (${b}->>'max')::float8),
    'zeros', (${a}->>'zeros')::numeric + (${b}->>'zeros')::numeric,
    'samples', CASE WHEN jsonb_typeof(${a}->'samples') = 'array'
      AND (${a}->>'count')::numeric + (${b}->>'count')::numeric <= ${sql.raw(String(EXACT_SAMPLE_LIMIT))}
      THEN CASE WHEN jsonb_typeof(${b}->'samples') = 'array' THEN (${a}->'samples') || (${b}->'samples')
        WHEN ${b}->'samples' = 'false'::jsonb THEN 'false'::jsonb END END,
    'buckets', coalesce(${a}->'buckets', '{}'::jsonb) || (SELECT coalesce(jsonb_object_agg(key, value::numeric + coalesce((${a}->'buckets'->>key)::numeric, 0)), '{}'::jsonb)
      FROM jsonb_each_text(${b}->'buckets'))
  ) END`;
}

/**
 * True when one of a written row's sketch columns holds `"samples": false`: its batch left its samples
 * out and the merge (or the insert of a new row) would have kept them (mergeSketchSql). The writer runs
 * the batch again with every sample; such a sketch is never committed.
 */
export function leftOutSamplesSql(columns: readonly string[]): SQL {
  return sql.join(
    columns.map((c) => sql`${sql.raw(c)}->'samples' = 'false'::jsonb`),
    sql` OR `,
  );
}

/**
 * What one process knows of the rollup sketches it wrote: per sketch (a table, a rollup key and a
 * column, as one string), how many samples its own committed batches added. A stored sketch keeps its
 * raw samples only while its count is within EXACT_SAMPLE_LIMIT (src/stats/summary.ts); once this
 * process alone committed more, the stored row's count is past it too (rows only grow, but for the
 * rare delete or rebuild below) and every later merge drops the samples, so a batch's own samples
 * need not be built into JSON, sent, nor parsed into jsonb by Postgres: ~5,000 numbers of a
 * 500-record batch's ~34 KB fold (docs/perf/ingest.md).
 *
 * The count is a lower bound, never a guess: only what committed is added (a batch's counts are
 * applied after its COMMIT, so a transaction run again cannot count twice); another process's writes
 * only make the stored count larger. A row deleted or rebuilt lower meanwhile (retention, a rebuild)
 * would make it wrong: the fold then sees the merge keep samples that the batch left out
 * (mergeSketchSql answers `"samples": false`, above), and ingest runs the batch
 * again with every sample (src/ingest/store-requests.ts), so stored sketches stay exactly what they
 * were with every sample sent.
 */
export class SampleCounts {
  private readonly committed = new Map<string, number>();

  /** A batch's view: which sketches may leave their samples out, and what it adds once committed. */
  batch(): BatchSamples {
    return new BatchSamples(this.committed);
  }

  /** Applies a committed batch's counts (bounded: past MAX_KEYS the counts start over, only costing samples sent). */
  commit(batch: BatchSamples): void {
    if (this.committed.size + batch.added.size > MAX_KEYS) this.committed.clear();
    for (const [key, n] of batch.added) this.committed.set(key, (this.committed.get(key) ?? 0) + n);
  }

  /** Forgets every count (a stored sketch was found smaller than counted). */
  clear(): void {
    this.committed.clear();
  }
}

/** Sketches counted per process and database; closed hours and days are never written again, so this bounds an idle map. */
const MAX_KEYS = 50_000;

/** One batch's use of the counts (SampleCounts.batch). `null` counts: every sample is sent. */
export class BatchSamples {
  readonly added = new Map<string, number>();
  constructor(private readonly committed: ReadonlyMap<string, number> | null) {}

  /**
   * The sketch as a fold row carries it: as it is, or with `"samples": false` in place of its samples
   * when the stored sketch of `key` is known to be past EXACT_SAMPLE_LIMIT once this batch is merged
   * (the merge would drop them). Counts the sketch's samples toward `key`.
   */
  sketch(key: string, s: LatencySketch): LatencySketch | (Omit<LatencySketch, "samples"> & { samples: false }) {
    if (s.count === 0) return s;
    const known = this.committed?.get(key) ?? 0;
    this.added.set(key, (this.added.get(key) ?? 0) + s.count);
    if (this.committed === null || !Array.isArray(s.samples) || known + s.count <= EXACT_SAMPLE_LIMIT) return s;
    return { ...s, samples: false };
  }
}

/** A batch that sends every sample (the run after a stale count, and callers with no counts). */
export const ALL_SAMPLES = (): BatchSamples => new BatchSamples(null);
