/**
 * The one latency summary routine. Samples go into a mergeable sketch; summaries of a room, of a
 * rollup window, of the metrics endpoint and of `voxgate latency` all come from `summarize`, so the
 * same data gives the same p95 everywhere.
 *
 * Percentile definition (docs/api/reports.md): nearest rank, pN = the ⌈N/100 × count⌉-th smallest
 * sample, never an interpolation. While a sketch holds at most EXACT_SAMPLE_LIMIT samples it keeps
 * them all and answers with a real sample; merges stay exact while the merged count is within the
 * bound. Past it, the log buckets (relative accuracy 1%, like DDSketch) answer, within 1% of the
 * nearest-rank sample. The buckets are always kept, so falling back never loses data.
 */

/** Most samples a sketch keeps raw (and answers exactly from); above it, the 1 % buckets answer. */
export const EXACT_SAMPLE_LIMIT = 1000;

/** Relative accuracy of every quantile: the answer is within 1% of a real sample value. */
export const SKETCH_RELATIVE_ACCURACY = 0.01;
const GAMMA = (1 + SKETCH_RELATIVE_ACCURACY) / (1 - SKETCH_RELATIVE_ACCURACY);
const LOG_GAMMA = Math.log(GAMMA);

/**
 * JSON-serialisable sketch: bucket index → count; zero (and negative) values counted apart.
 * While a sketch is exact its samples are the truth and its buckets may be partial: the fleet index's
 * caches store none (src/rollups/sketch-json.ts packedSketch) and its page merges skip them
 * (mergeStoredSketch), since decoding and adding ~85 buckets per stored sketch was a third of a page's
 * Node time and an exact answer never reads them. A sketch that stops being exact first gets its
 * buckets back from its samples (completeBuckets), so an inexact sketch's buckets are always
 * complete. Rollup rows are written from addSample/mergeSketch, which keep them complete: SQL merges
 * them (mergeSketchSql).
 */
export interface LatencySketch {
  count: number;
  sum: number;
  min: number;
  max: number;
  zeros: number;
  buckets: Record<string, number>;
  /** Every sample, while count ≤ EXACT_SAMPLE_LIMIT; null (or absent, in older stored sketches) past it. */
  samples?: number[] | null;
}

export interface LatencySummary {
  count: number;
  avg: number;
  min: number;
  max: number;
  p50: number;
  p90: number;
  p95: number;
  p99: number;
}

export function emptySketch(): LatencySketch {
  return { count: 0, sum: 0, min: Number.POSITIVE_INFINITY, max: Number.NEGATIVE_INFINITY, zeros: 0, buckets: {}, samples: [] };
}

function bucketIndex(value: number): number {
  return Math.ceil(Math.log(value) / LOG_GAMMA);
}

function bucketValue(index: number): number {
  // The bucket (γ^(i-1), γ^i] is represented by the point with equal relative error to both ends.
  return (2 * GAMMA ** index) / (GAMMA + 1);
}

/** Adds one sample (ms). Non-finite values are ignored; values ≤ 1e-9 count as zero. */
export function addSample(sketch: LatencySketch, value: number): void {
  if (!Number.isFinite(value)) return;
  if (sketch.samples) {
    if (sketch.count < EXACT_SAMPLE_LIMIT) sketch.samples.push(value);
    else {
      completeBuckets(sketch);
      sketch.samples = null;
    }
  }
  sketch.count += 1;
  sketch.sum += value;
  if (value < sketch.min) sketch.min = value;
  if (value > sketch.max) sketch.max = value;
  if (value <= 1e-9) {
    sketch.zeros += 1;
    return;
  }
  const key = String(bucketIndex(value));
  sketch.buckets[key] = (sketch.buckets[key] ?? 0) + 1;
}

export function sketchOf(samples: Iterable<number>): LatencySketch {
  const s = emptySketch();
  for (const v of samples) addSample(s, v);
  return s;
}

/** Merges b into a (rollup buckets of any window combine exactly; raw samples while within the bound). */
export function mergeSketch(a: LatencySketch, b: LatencySketch): LatencySketch {
  if (a.samples && b.samples && a.count + b.count <= EXACT_SAMPLE_LIMIT) {
    a.samples = a.samples.concat(b.samples);
    addBuckets(a.buckets, b.buckets);
  } else {
    // Leaving (or past) exactness: both sides' buckets must be complete from here on.
    completeBuckets(a);
    a.samples = null;
    addBuckets(a.buckets, b.samples && !bucketsComplete(b) ? bucketsOf(b.samples) : b.buckets);
  }
  a.count += b.count;
  a.sum += b.sum;
  a.min = Math.min(a.min, b.min);
  a.max = Math.max(a.max, b.max);
  a.zeros += b.zeros;
  return a;
}

/** Adds `from`'s bucket counts into `into` (a stored sketch's too: anything not a number is skipped). */
export function addBuckets(into: Record<string, number>, from: Readonly<Record<string, unknown>>): void {
  // for…in, not Object.entries: no [key, value] array per bucket (~90 per stored sketch).
  for (const k in from) {
    const n = from[k];
    if (typeof n === "number") into[k] = (into[k] ?? 0) + n;
  }
}

/** The buckets addSample would have counted for `samples` (zeros are counted apart, in `zeros`). */
export function bucketsOf(samples: readonly number[]): Record<string, number> {
  const buckets: Record<string, number> = {};
  for (const v of samples) {
    if (v <= 1e-9) continue;
    const key = String(bucketIndex(v));
    buckets[key] = (buckets[key] ?? 0) + 1;
  }
  return buckets;
}

/** True when every sample is counted in `zeros` or a bucket (always, once a sketch is inexact). */
export function bucketsComplete(sketch: LatencySketch): boolean {
  let n = sketch.zeros;
  for (const k in sketch.buckets) n += sketch.buckets[k] as number;
  return n === sketch.count;
}

/** Rebuilds an exact sketch's partial buckets from its samples (before it drops them). */
export function completeBuckets(sketch: LatencySketch): void {
  if (sketch.samples && !bucketsComplete(sketch)) sketch.buckets = bucketsOf(sketch.samples);
}

/** True when the sketch still holds every sample (answers are exact). */
export function isExact(sketch: LatencySketch): sketch is LatencySketch & { samples: number[] } {
  return Array.isArray(sketch.samples) && sketch.samples.length === sketch.count;
}

/**
 * The q-quantile (0..1) by nearest rank: the ⌈q × count⌉-th smallest sample, exactly while the sketch
 * holds its samples, else from the buckets (within 1 %, clamped to the observed min/max).
 */
export function quantile(sketch: LatencySketch, q: number): number {
  return quantiles(sketch, [q])[0] as number;
}

/**
 * quantile for several q at once: the bucket keys are sorted once, not once per q (a latency series
 * summarises a few hundred sketches of ~150 buckets, four quantiles each).
 */
export function quantiles(sketch: LatencySketch, qs: readonly number[]): number[] {
  if (sketch.count === 0) return qs.map(() => Number.NaN);
  const ranks = qs.map((q) => Math.max(1, Math.ceil(q * sketch.count)));
  if (isExact(sketch)) {
    const sorted = sortedSamples(sketch);
    return ranks.map((rank) => sorted[rank - 1] ?? sketch.max);
  }
  const known = sortedBucketsOf.get(sketch.buckets);
  let keys: ArrayLike<number>;
  let counts: ArrayLike<number>;
  if (known && known.count === sketch.count) ({ keys, counts } = known);
  else {
    keys = Float64Array.from(Object.keys(sketch.buckets), Number).sort();
    counts = Array.from(keys, (k) => sketch.buckets[String(k)] ?? 0);
  }
  return ranks.map((rank) => {
    if (rank <= sketch.zeros) return Math.max(sketch.min, 0);
    let seen = sketch.zeros;
    for (let i = 0; i < keys.length; i++) {
      seen += counts[i] as number;
      if (seen >= rank) return clamp(bucketValue(keys[i] as number), sketch.min, sketch.max);
    }
    return sketch.max;
  });
}

/**
 * A sketch's buckets in ascending key order, given by whoever built them so (src/reports/sketch-cache.ts
 * sums them in a dense array): quantiles then skips turning the keys into numbers and sorting them.
 * Valid while the sketch's count is the one given: every change to a sketch (addSample, mergeSketch)
 * adds to its count.
 */
const sortedBucketsOf = new WeakMap<Record<string, number>, { count: number; keys: ArrayLike<number>; counts: ArrayLike<number> }>();
export function noteSortedBuckets(sketch: LatencySketch, keys: ArrayLike<number>, counts: ArrayLike<number>): void {
  sortedBucketsOf.set(sketch.buckets, { count: sketch.count, keys, counts });
}

/**
 * The samples in ascending order, sorted once per sketch state (summarize asks four quantiles). A
 * Float64Array sorts numerically without a comparator call per comparison: 3-5x faster than
 * Array#sort((x, y) => x - y), which was most of a fleet-index page's Node time (1,000-sample sketches).
 * Samples that arrive as a sorted run followed by a few others (a cached span sketch, stored sorted,
 * plus the day's samples merged after it) are not sorted again: the tail is sorted and merged in, O(n).
 */
const sortedCache = new WeakMap<number[], { length: number; sorted: ArrayLike<number> }>();
function sortedSamples(sketch: LatencySketch & { samples: number[] }): ArrayLike<number> {
  const samples = sketch.samples;
  const hit = sortedCache.get(samples);
  if (hit && hit.length === samples.length) return hit.sorted;
  const sorted = ascending(samples);
  sortedCache.set(samples, { length: samples.length, sorted });
  return sorted;
}

/** `values` in ascending order: itself when already sorted (callers only read it), a sorted run merged with its sorted tail, or a full sort. */
export function ascending(values: readonly number[]): ArrayLike<number> {
  const n = values.length;
  let run = 1;
  while (run < n && (values[run - 1] as number) <= (values[run] as number)) run++;
  if (run >= n) return values;
  if (n - run > run) return Float64Array.from(values).sort();
  const tail = Float64Array.from(values.slice(run)).sort();
  const out = new Float64Array(n);
  let i = 0;
  let j = 0;
  for (let k = 0; k < n; k++) {
    if (j >= tail.length || (i < run && (values[i] as number) <= (tail[j] as number))) out[k] = values[i++] as number;
    else out[k] = tail[j++] as number;
  }
  return out;
}

function clamp(v: number, lo: number, hi: number): number {
  return Math.min(hi, Math.max(lo, v));
}

const round2 = (v: number) => Math.round(v * 100) / 100;

/**
 * The sketch with its raw samples rounded to the 0.01 ms summaries report, for a cache that is read
 * far more often than written (src/fleet/span-sketches.ts). Rounding is monotone and idempotent, so the k-th smallest of any merge that includes these samples rounds to
 * the same reported value; sum, min, max and buckets are kept as they are. The samples are stored in
 * ascending order, so a page that merges the day's few samples after them does not sort them again.
 */
export function atReportedPrecision(sketch: LatencySketch): LatencySketch {
  return sketch.samples ? { ...sketch, samples: Array.from(ascending(sketch.samples.map(round2))) } : sketch;
}

/** count/avg/min/max/p50/p90/p95/p99 in ms (2 decimals), or null when there is no sample. */
export function summarize(sketch: LatencySketch): LatencySummary | null {
  if (sketch.count === 0) return null;
  const [p50, p90, p95, p99] = quantiles(sketch, [0.5, 0.9, 0.95, 0.99]) as [number, number, number, number];
  return {
    count: sketch.count,
    avg: round2(sketch.sum / sketch.count),
    min: round2(sketch.min),
    max: round2(sketch.max),
    p50: round2(p50),
    p90: round2(p90),
    p95: round2(p95),
    p99: round2(p99),
  };
}

/** Shortcut for a list of raw samples. */
export function summarizeSamples(samples: Iterable<number>): LatencySummary | null {
  return summarize(sketchOf(samples));
}
