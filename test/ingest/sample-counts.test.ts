import { randomUUID } from "node:crypto";
import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { queryRows } from "../../src/db/client.js";
import type { RequestRow } from "../../src/rollups/apply.js";
import { bucketsOf, EXACT_SAMPLE_LIMIT, type LatencySketch } from "../../src/stats/summary.js";
import { createTestDatabase, type TestDatabase } from "../support/db.js";
import { storeRequestRows } from "../support/seed.js";

/**
 * Once this process committed more than EXACT_SAMPLE_LIMIT samples to a sketch, a batch leaves its
 * samples out of the fold (src/rollups/sketch-json.ts): the merge drops them anyway. The stored
 * sketches must stay exactly what they would be with every sample sent, also when a stored row was
 * deleted meanwhile (retention, a rebuild): the fold then finds it kept samples the batch left out and
 * the batch runs again with them. A BEFORE trigger counts, in a sequence (not rolled back), the rows
 * proposed with `"samples": false`, so the test sees the samples were left out.
 */
describe("sketch samples left out of a saturated key's fold", () => {
  let tdb: TestDatabase;
  const tables = ["request_rollups", "request_rollups_daily", "fleet_index_agent_rollups", "fleet_index_agent_rollups_daily"];
  beforeAll(async () => {
    tdb = await createTestDatabase();
    const db = tdb.database.db;
    await db.execute(sql`CREATE SEQUENCE left_out_seen`);
    await db.execute(
      sql.raw(`CREATE FUNCTION see_left_out() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN IF to_jsonb(NEW)::text LIKE '%"samples": false%' THEN PERFORM nextval('left_out_seen'); END IF; RETURN NEW; END $$`),
    );
    for (const t of tables) await db.execute(sql.raw(`CREATE TRIGGER see_left_out BEFORE INSERT ON ${t} FOR EACH ROW EXECUTE FUNCTION see_left_out()`));
  });
  afterAll(async () => {
    await tdb.drop();
  });

  const leftOutSeen = async () => {
    const [r] = await queryRows<{ n: string }>(tdb.database.db, sql`SELECT CASE WHEN is_called THEN last_value ELSE 0 END AS n FROM left_out_seen`);
    return Number(r?.n ?? 0);
  };

  it("stores every sketch as with every sample, before and after a stored row is deleted", async () => {
    const hour = Math.floor(Date.now() / 3_600_000) * 3_600_000 - 3 * 3_600_000;
    let ttfbs: number[] = [];
    const batch = (b: number, n: number): RequestRow[] =>
      Array.from({ length: n }, (_, i) => {
        const ttfb = i % 13 === 0 ? 0 : 20 + ((b * 37 + i * 11) % 700);
        ttfbs.push(ttfb);
        return {
          id: randomUUID(),
          ts: new Date(hour + b * 60_000 + i),
          modality: "llm",
          model_id: "openai/gpt-4.1-mini",
          provider: "openai",
          project: "saturated",
          agent_id: "saturated-agent",
          ttfb_ms: ttfb,
          total_latency_ms: ttfb + 100,
        };
      });
    const expectStored = async (exact: boolean, what: string) => {
      const [r] = await queryRows<{ ttfb: LatencySketch }>(tdb.database.db, sql`SELECT ttfb_hist AS ttfb FROM request_rollups WHERE project = 'saturated'`);
      expectSketchOf(r?.ttfb, ttfbs, exact, `request_rollups ${what}`);
      const [d] = await queryRows<{ ttfb: LatencySketch }>(tdb.database.db, sql`SELECT ttfb_hist AS ttfb FROM request_rollups_daily WHERE project = 'saturated'`);
      expectSketchOf(d?.ttfb, ttfbs, exact, `request_rollups_daily ${what}`);
      for (const table of ["fleet_index_agent_rollups", "fleet_index_agent_rollups_daily"]) {
        const [f] = await queryRows<{ ttfb: LatencySketch }>(tdb.database.db, sql`SELECT llm_ttfb_hist AS ttfb FROM ${sql.raw(table)} WHERE agent_id = 'saturated-agent'`);
        expectSketchOf(f?.ttfb, ttfbs, exact, `${table} ${what}`);
      }
    };

    // 600 committed; 600 + 500 is past the bound (the merge drops the samples): the second batch and
    // every later one leave theirs out.
    const db = tdb.database.db;
    expect(await storeRequestRows(db, null, batch(0, 600))).toHaveLength(600);
    await expectStored(true, "within the bound");
    expect(await leftOutSeen()).toBe(0);
    expect(await storeRequestRows(db, null, batch(1, 500))).toHaveLength(500);
    expect(await leftOutSeen()).toBeGreaterThan(0);
    await expectStored(false, "past the bound");
    expect(await storeRequestRows(db, null, batch(2, 200))).toHaveLength(200);
    await expectStored(false, "after a batch without its samples");

    // A retention run or a rebuild deleted the rows: this process still counts the key as past the
    // bound, but the stored sketches must be the new batch's own, samples included.
    for (const t of tables) await db.execute(sql.raw(`DELETE FROM ${t}`));
    ttfbs = [];
    const seen = await leftOutSeen();
    expect(await storeRequestRows(db, null, batch(3, 150))).toHaveLength(150);
    expect(await leftOutSeen(), "the first try left the samples out").toBeGreaterThan(seen);
    await expectStored(true, "after the rows were deleted");
    expect(ttfbs.length).toBeLessThan(EXACT_SAMPLE_LIMIT);

    // The counts started over: the next batches send their samples until the bound again.
    const again = await leftOutSeen();
    expect(await storeRequestRows(db, null, batch(4, 300))).toHaveLength(300);
    expect(await leftOutSeen()).toBe(again);
    await expectStored(true, "exact again");
  });
});

function expectSketchOf(got: LatencySketch | undefined, samples: number[], exact: boolean, what: string) {
  expect(got, what).toBeDefined();
  if (!got) return;
  expect(got.count, what).toBe(samples.length);
  expect(got.sum, what).toBeCloseTo(
    samples.reduce((a, v) => a + v, 0),
    6,
  );
  expect(got.zeros, what).toBe(samples.filter((v) => v <= 0).length);
  expect(got.buckets, what).toEqual(bucketsOf(samples));
  if (exact) expect([...(got.samples ?? [])].sort((a, b) => a - b), what).toEqual([...samples].sort((a, b) => a - b));
  else expect(got.samples ?? null, what).toBeNull();
}
