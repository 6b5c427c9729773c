import { type SQL, sql } from "drizzle-orm";
import { type Db, queryRows } from "../db/client.js";
import { storedSamples } from "../rollups/sketch-json.js";
import { addSample, EXACT_SAMPLE_LIMIT, emptySketch, type LatencySketch, noteSortedBuckets } from "../stats/summary.js";

/**
 * A rollup row's stored latency sketch, parsed once: its buckets as parallel arrays (index, count),
 * its samples when the row keeps them all. Reports merge hundreds of these per answer; as jsonb they
 * were most of a read's cost (Postgres detoasting and printing ~1 KB per sketch, Node parsing it), and
 * that cost grew with the traffic (more samples per hour, more distinct buckets per sketch).
 */
export interface ParsedSketch {
  count: number;
  sum: number;
  min: number;
  max: number;
  zeros: number;
  index: Int32Array;
  counts: Float64Array;
  /** Every sample (as many as `count`), or null when the stored sketch has none. */
  samples: readonly number[] | null;
  /** True when `index` is in ascending order (what quantiles needs; mergeParts' always is). */
  ascending: boolean;
}

const EMPTY: ParsedSketch = {
  count: 0,
  sum: 0,
  min: Number.POSITIVE_INFINITY,
  max: Number.NEGATIVE_INFINITY,
  zeros: 0,
  index: new Int32Array(0),
  counts: new Float64Array(0),
  samples: [],
  ascending: true,
};

/** A stored sketch (jsonb, as node-postgres and PGlite hand it over) parsed; anything malformed is empty, as in mergeStoredSketch. */
export function parseStoredSketch(value: unknown): ParsedSketch {
  let raw = value;
  if (typeof value === "string") {
    try {
      raw = JSON.parse(value) as unknown;
    } catch {
      return EMPTY;
    }
  }
  if (raw === null || typeof raw !== "object") return EMPTY;
  const o = raw as Record<string, unknown>;
  const num = (v: unknown, dflt: number) => (typeof v === "number" && Number.isFinite(v) ? v : dflt);
  const count = num(o.count, 0);
  if (count <= 0) return EMPTY;
  const keys: number[] = [];
  const counts: number[] = [];
  const buckets = o.buckets;
  if (buckets !== null && typeof buckets === "object") {
    const b = buckets as Record<string, unknown>;
    for (const k in b) {
      const n = b[k];
      const i = Number(k);
      if (typeof n === "number" && Number.isInteger(i)) {
        keys.push(i);
        counts.push(n);
      }
    }
  }
  return {
    count,
    sum: num(o.sum, 0),
    min: num(o.min, Number.POSITIVE_INFINITY),
    max: num(o.max, Number.NEGATIVE_INFINITY),
    zeros: num(o.zeros, 0),
    index: Int32Array.from(keys),
    counts: Float64Array.from(counts),
    samples: storedSamples(o.samples, count),
    ascending: keys.every((k, i) => i === 0 || (keys[i - 1] as number) < k),
  };
}

/** The ttfb and total-latency sketches of one rollup row version. */
export interface SketchPair {
  ttfb: ParsedSketch;
  latency: ParsedSketch;
}

/**
 * Most numbers (bucket indexes and counts, samples) the cache of one database holds: ~25 MB. A month
 * of one tenant's hour and day rows at 10M requests a year is ~0.1 M; the rest serves other tenants,
 * projects and periods.
 */
const MAX_WEIGHT = 3_000_000;
/** Most merged answer lines kept (each ~300 bucket numbers, up to 1,000 samples more). */
const MAX_MERGED = 1_000;
/** Most query shapes (tenant, project, period) whose last answer's row versions are remembered. */
const MAX_SHAPES = 500;

const weightOf = (p: ParsedSketch) => 8 + p.index.length * 2 + (p.samples?.length ?? 0);

/**
 * Parsed rollup sketches by row version, for one database handle. A version is the row's table file,
 * ctid and xmin (ROW_VERSION): a tuple version never changes, an upsert writes a new one, so a
 * cached version is never stale; a replica (DATABASE_READ_URL) has the primary's versions, and each
 * handle has its own cache anyway. A report sends the versions its last answer of the same shape held
 * and is answered NULL sketches for those still current: closed hours and days cost a few bytes a row
 * instead of their sketches, so a read no longer grows with each sketch's size. Least recently used
 * versions go first.
 */
export class SketchCache {
  private readonly entries = new Map<string, SketchPair>();
  private readonly shapes = new Map<string, string[]>();
  private readonly merged = new Map<string, { parts: string; pair: SketchPair }>();
  private weight = 0;

  constructor(private readonly maxWeight = MAX_WEIGHT) {}

  get(version: string): SketchPair | undefined {
    const hit = this.entries.get(version);
    if (hit) {
      // Map order is insertion order: re-inserting marks it most recently used.
      this.entries.delete(version);
      this.entries.set(version, hit);
    }
    return hit;
  }

  has(version: string): boolean {
    return this.entries.has(version);
  }

  set(version: string, pair: SketchPair): void {
    const old = this.entries.get(version);
    if (old) this.weight -= weightOf(old.ttfb) + weightOf(old.latency);
    this.entries.delete(version);
    this.entries.set(version, pair);
    this.weight += weightOf(pair.ttfb) + weightOf(pair.latency);
    for (const [k, v] of this.entries) {
      if (this.weight <= this.maxWeight || k === version) break;
      this.entries.delete(k);
      this.weight -= weightOf(v.ttfb) + weightOf(v.latency);
    }
  }

  /** The versions the last answer of this shape held that are still cached: the ones the database may answer without their sketches. */
  known(shape: string): string[] {
    return (this.shapes.get(shape) ?? []).filter((v) => this.entries.has(v));
  }

  /**
   * The parts of one answer line (a model of a report, a point of a series) merged, reused while the
   * line is made of the same row versions: a week's closed hours and days are summed once, not on
   * every read. `parts` names the versions (joined).
   */
  mergedParts(line: string, parts: string, merge: () => SketchPair): SketchPair {
    const hit = this.merged.get(line);
    if (hit && hit.parts === parts) return hit.pair;
    const pair = merge();
    this.merged.delete(line);
    this.merged.set(line, { parts, pair });
    if (this.merged.size > MAX_MERGED) this.merged.delete(this.merged.keys().next().value as string);
    return pair;
  }

  remember(shape: string, versions: string[]): void {
    this.shapes.delete(shape);
    this.shapes.set(shape, versions);
    if (this.shapes.size > MAX_SHAPES) this.shapes.delete(this.shapes.keys().next().value as string);
  }
}

/**
 * A rollup row's version as the cache keys it: its table's file, its place in it and the transaction
 * that wrote it. An upsert writes a new tuple (a new place or transaction); the file, not the table's
 * oid, because a rewrite (VACUUM FULL, CLUSTER) moves rows written by one transaction into places that
 * other rows of it had.
 */
export const ROW_VERSION = sql.raw(`pg_relation_filenode(tableoid)::text || ':' || ctid::text || ':' || xmin::text`);

/** The columns readSketchRows needs of each row: rollup rows have a version, other rows (raw ones) a null `v`. */
export interface SketchRow {
  v: string | null;
  /** True when the query was told the version is cached: then `th` and `lh` are not sent (NULL). */
  cached: boolean | null;
  th: unknown;
  lh: unknown;
}

/**
 * Runs a query of rollup rows through the cache. `query(known)` gets the versions the cache holds for
 * this shape as a relation of one column `kv` (join it: `LEFT JOIN ${known} k ON k.kv = r.v`; a join
 * hashes the list once, where `v IN (…)` was a hashed subplan per reference) and must answer `cached`
 * for each rollup row and NULL sketches where it is true; Postgres then never reads those sketches'
 * TOAST. Returns the rows with each rollup row's parsed sketches (undefined for the other rows).
 */
export async function readSketchRows<R extends SketchRow>(
  db: Db,
  cache: SketchCache,
  shape: string,
  query: (known: SQL) => SQL,
): Promise<{ rows: R[]; pairs: (SketchPair | undefined)[] }> {
  // Distinct: a version listed twice would join its row twice.
  const ask = (known: string[]) => queryRows<R>(db, query(sql`(SELECT json_array_elements_text(${JSON.stringify([...new Set(known)])}::json) AS kv)`));
  let rows = await ask(cache.known(shape));
  // The cached rows' sketches, taken before this answer's new ones go in (which may evict some).
  let pairs = rows.map((r) => (r.cached && r.v !== null ? cache.get(r.v) : undefined));
  // A version listed as known but evicted meanwhile (another report filled the cache): ask again for every sketch.
  if (rows.some((r, i) => r.cached && pairs[i] === undefined)) {
    rows = await ask([]);
    pairs = [];
  }
  const versions: string[] = [];
  for (const [i, r] of rows.entries()) {
    if (r.v === null) continue;
    if (!pairs[i]) {
      pairs[i] = { ttfb: parseStoredSketch(r.th), latency: parseStoredSketch(r.lh) };
      cache.set(r.v, pairs[i]);
    }
    versions.push(r.v);
  }
  cache.remember(shape, versions);
  return { rows, pairs };
}

const caches = new WeakMap<Db, SketchCache>();

/** The sketch cache of a database handle (created on first use; it goes with the handle). */
export function sketchCacheOf(db: Db): SketchCache {
  let cache = caches.get(db);
  if (!cache) {
    cache = new SketchCache();
    caches.set(db, cache);
  }
  return cache;
}

/**
 * Parts merged into one parsed sketch: counts and sums added, buckets summed in one dense array over
 * the parts' index range (a week of hour and day rows is ~10^4 bucket counts, which string-keyed
 * records made a few milliseconds), samples kept while every part has them and their total is within
 * EXACT_SAMPLE_LIMIT. Its buckets are in ascending order.
 */
export function mergeParts(parts: readonly ParsedSketch[]): ParsedSketch {
  let count = 0;
  let sum = 0;
  let min = Number.POSITIVE_INFINITY;
  let max = Number.NEGATIVE_INFINITY;
  let zeros = 0;
  let allSamples = true;
  let lo = Number.POSITIVE_INFINITY;
  let hi = Number.NEGATIVE_INFINITY;
  for (const p of parts) {
    count += p.count;
    sum += p.sum;
    if (p.min < min) min = p.min;
    if (p.max > max) max = p.max;
    zeros += p.zeros;
    if (p.samples === null) allSamples = false;
    const index = p.index;
    for (let k = 0; k < index.length; k++) {
      const i = index[k] as number;
      if (i < lo) lo = i;
      if (i > hi) hi = i;
    }
  }
  const keys: number[] = [];
  const counts: number[] = [];
  if (lo <= hi) {
    const dense = new Float64Array(hi - lo + 1);
    for (const p of parts) {
      const index = p.index;
      const n = p.counts;
      for (let k = 0; k < index.length; k++) {
        const at = (index[k] as number) - lo;
        dense[at] = (dense[at] as number) + (n[k] as number);
      }
    }
    for (let k = 0; k < dense.length; k++) {
      if (dense[k] === 0) continue;
      keys.push(k + lo);
      counts.push(dense[k] as number);
    }
  }
  let samples: number[] | null = null;
  if (allSamples && count <= EXACT_SAMPLE_LIMIT) {
    samples = [];
    for (const p of parts) for (const v of p.samples as readonly number[]) samples.push(v);
  }
  return { count, sum, min, max, zeros, index: Int32Array.from(keys), counts: Float64Array.from(counts), samples, ascending: true };
}

/**
 * One sketch from parsed rollup sketches and raw samples, as merging them one by one with
 * mergeStoredSketch and addSample gives: exact (their samples) while the total count is within
 * EXACT_SAMPLE_LIMIT and every part kept its samples, else the sum of their buckets.
 */
export function sketchOfParts(parts: readonly ParsedSketch[], raw: readonly number[]): LatencySketch {
  const m = parts.length === 1 ? (parts[0] as ParsedSketch) : mergeParts(parts);
  const out = emptySketch();
  const exact = m.samples !== null && m.count + raw.length <= EXACT_SAMPLE_LIMIT;
  if (exact) out.samples = (m.samples as readonly number[]).slice();
  else {
    out.samples = null;
    for (let k = 0; k < m.index.length; k++) out.buckets[String(m.index[k])] = m.counts[k] as number;
  }
  out.count = m.count;
  out.sum = m.sum;
  out.min = m.min;
  out.max = m.max;
  out.zeros = m.zeros;
  if (!exact && m.ascending && raw.length === 0) noteSortedBuckets(out, m.index, m.counts);
  for (const v of raw) addSample(out, v);
  return out;
}
