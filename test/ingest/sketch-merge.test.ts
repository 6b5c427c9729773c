import { randomUUID } from "node:crypto";
import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { queryRows } from "../../src/db/client.js";
import type { RequestRow } from "../../src/rollups/apply.js";
import { bucketsOf, EXACT_SAMPLE_LIMIT, type LatencySketch } from "../../src/stats/summary.js";
import { createTestDatabase, type TestDatabase } from "../support/db.js";
import { storeRequestRows } from "../support/seed.js";

/**
 * The rollup upserts merge a batch's latency sketch into the stored one in SQL (mergeSketchSql,
 * src/rollups/sketch-json.ts). The stored jsonb is read here as it is (not through sketchFromJson,
 * which rebuilds an exact sketch's buckets from its samples): its buckets must equal the buckets of
 * every sample stored, with keys only the stored side holds, keys only the batch holds, and keys
 * both hold; before and past EXACT_SAMPLE_LIMIT; in the request rollups and the per-agent rollups.
 */
describe("stored sketches after merges", () => {
  let tdb: TestDatabase;
  beforeAll(async () => {
    tdb = await createTestDatabase();
  });
  afterAll(async () => {
    await tdb.drop();
  });

  it("hold the buckets, count, sum, min, max and zeros of every sample, and the samples while exact", async () => {
    const hour = Math.floor(Date.now() / 3_600_000) * 3_600_000 - 2 * 3_600_000;
    const ttfbs: number[] = [];
    const latencies: number[] = [];
    // Each batch covers its own range of latencies (new buckets on the batch's side), overlapping
    // the one before (shared buckets); the stored side keeps buckets no later batch has.
    const ranges = [
      [10, 60],
      [40, 400],
      [300, 900],
      [5, 20],
    ] as const;
    const sizes = [300, 450, 600, 120];
    let stored = 0;
    for (const [b, [lo, hi]] of ranges.entries()) {
      const n = sizes[b] ?? 0;
      const rows: RequestRow[] = Array.from({ length: n }, (_, i) => {
        const ttfb = i % 17 === 0 ? 0 : lo + ((hi - lo) * i) / n;
        const latency = lo * 3 + ((hi - lo) * 5 * ((i * 7) % n)) / n;
        ttfbs.push(ttfb);
        latencies.push(latency);
        return {
          id: randomUUID(),
          ts: new Date(hour + b * 60_000 + i),
          modality: "llm",
          model_id: "openai/gpt-4.1-mini",
          provider: "openai",
          project: "merge",
          agent_id: "merge-agent",
          ttfb_ms: ttfb,
          total_latency_ms: latency,
        };
      });
      expect(await storeRequestRows(tdb.database.db, null, rows)).toHaveLength(n);
      stored += n;
      const exact = stored <= EXACT_SAMPLE_LIMIT;
      const [r] = await queryRows<{ ttfb: Sketch; latency: Sketch }>(
        tdb.database.db,
        sql`SELECT ttfb_hist AS ttfb, latency_hist AS latency FROM request_rollups WHERE project = 'merge'`,
      );
      expectSketchOf(r?.ttfb, ttfbs, exact, `request_rollups ttfb after batch ${b}`);
      expectSketchOf(r?.latency, latencies, exact, `request_rollups latency after batch ${b}`);
      for (const table of ["fleet_index_agent_rollups", "fleet_index_agent_rollups_daily"]) {
        const [f] = await queryRows<{ ttfb: Sketch }>(tdb.database.db, sql`SELECT llm_ttfb_hist AS ttfb FROM ${sql.raw(table)} WHERE agent_id = 'merge-agent'`);
        expectSketchOf(f?.ttfb, ttfbs, exact, `${table} after batch ${b}`);
      }
    }
    expect(stored).toBeGreaterThan(EXACT_SAMPLE_LIMIT);
  });
});

/** The stored jsonb, read as it is: the shape summary.ts writes. */
type Sketch = LatencySketch;

function expectSketchOf(got: Sketch | undefined, samples: number[], exact: boolean, what: string) {
  expect(got, what).toBeDefined();
  if (!got) return;
  const positive = samples.filter((v) => v > 0);
  expect(got.count, what).toBe(samples.length);
  expect(got.sum, what).toBeCloseTo(samples.reduce((a, v) => a + v, 0), 6);
  expect(got.min, what).toBe(Math.min(...samples));
  expect(got.max, what).toBe(Math.max(...samples));
  expect(got.zeros, what).toBe(samples.length - positive.length);
  expect(got.buckets, what).toEqual(bucketsOf(samples));
  if (exact) expect([...(got.samples ?? [])].sort((a, b) => a - b), what).toEqual([...samples].sort((a, b) => a - b));
  else expect(got.samples ?? null, what).toBeNull();
}
