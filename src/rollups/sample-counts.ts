import { EXACT_SAMPLE_LIMIT, type LatencySketch } from "../stats/summary.js";

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
 * (mergeSketchSql answers `"samples": false`, src/rollups/sketch-json.ts), and ingest runs the batch
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
