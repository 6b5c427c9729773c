/**
 * The one latency summary routine. Samples go into a mergeable log-bucketed sketch (relative
 * accuracy 1%, like DDSketch); summaries of a room, of a rollup window, of the metrics endpoint and
 * of `voxgate latency` all come from `summarize`, so the same data gives the same p95 everywhere.
 */

/** Relative accuracy of every quantile: the answer is within 1% of a real sample value. */
export const SKETCH_RELATIVE_ACCURACY = 0.01;
const GAMMA = (1 + SKETCH_RELATIVE_ACCURACY) / (1 - SKETCH_RELATIVE_ACCURACY);
const LOG_GAMMA = Math.log(GAMMA);

/** JSON-serialisable sketch: bucket index → count; zero (and negative) values counted apart. */
export interface LatencySketch {
  count: number;
  sum: number;
  min: number;
  max: number;
  zeros: number;
  buckets: Record<string, number>;
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
  return { count: 0, sum: 0, min: Number.POSITIVE_INFINITY, max: Number.NEGATIVE_INFINITY, zeros: 0, buckets: {} };
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

/** Merges b into a (rollup buckets of any window combine exactly). */
export function mergeSketch(a: LatencySketch, b: LatencySketch): LatencySketch {
  a.count += b.count;
  a.sum += b.sum;
  a.min = Math.min(a.min, b.min);
  a.max = Math.max(a.max, b.max);
  a.zeros += b.zeros;
  for (const [k, n] of Object.entries(b.buckets)) a.buckets[k] = (a.buckets[k] ?? 0) + n;
  return a;
}

/** The q-quantile (0..1), clamped to the observed min/max. Nearest-rank over the buckets. */
export function quantile(sketch: LatencySketch, q: number): number {
  if (sketch.count === 0) return Number.NaN;
  const rank = Math.max(1, Math.ceil(q * sketch.count));
  if (rank <= sketch.zeros) return Math.max(sketch.min, 0);
  let seen = sketch.zeros;
  const keys = Object.keys(sketch.buckets)
    .map(Number)
    .sort((x, y) => x - y);
  for (const k of keys) {
    seen += sketch.buckets[String(k)] ?? 0;
    if (seen >= rank) return clamp(bucketValue(k), sketch.min, sketch.max);
  }
  return sketch.max;
}

function clamp(v: number, lo: number, hi: number): number {
  return Math.min(hi, Math.max(lo, v));
}

const round2 = (v: number) => Math.round(v * 100) / 100;

/** count/avg/min/max/p50/p90/p95/p99 in ms (2 decimals), or null when there is no sample. */
export function summarize(sketch: LatencySketch): LatencySummary | null {
  if (sketch.count === 0) return null;
  return {
    count: sketch.count,
    avg: round2(sketch.sum / sketch.count),
    min: round2(sketch.min),
    max: round2(sketch.max),
    p50: round2(quantile(sketch, 0.5)),
    p90: round2(quantile(sketch, 0.9)),
    p95: round2(quantile(sketch, 0.95)),
    p99: round2(quantile(sketch, 0.99)),
  };
}

/** Shortcut for a list of raw samples. */
export function summarizeSamples(samples: Iterable<number>): LatencySummary | null {
  return summarize(sketchOf(samples));
}
