import { type SQL, sql } from "drizzle-orm";
import { describe, expect, inject, it } from "vitest";
import type { Db } from "../../src/db/client.js";
import { rankPageSql } from "../../src/fleet/index-queries.js";
import { rankTerms } from "../../src/fleet/rank-plan.js";
import { useTestApp } from "../support/app.js";
import { planWith } from "../support/db.js";

/** Parallel plans made free: any statement Postgres may run parallel then gets a Gather. */
const FREE_PARALLELISM = ["parallel_setup_cost = 0", "parallel_tuple_cost = 0", "min_parallel_table_scan_size = 0", "min_parallel_index_scan_size = 0", "max_parallel_workers_per_gather = 2"];
const planWithFreeParallelism = (db: Db, stmt: SQL) => planWith(db, FREE_PARALLELISM, stmt);

/**
 * The ranking must run serial (src/fleet/index-queries.ts rankPageSql: parallel workers' start-up cost
 * more than the whole statement on a small machine). It asks for that with a PARALLEL UNSAFE function
 * (migrations/0020_fleet_serial_plan.sql) rather than a SET LOCAL in a transaction.
 */
describe("the fleet index's ranking is planned serial", () => {
  const t = useTestApp();
  it.skipIf(inject("dbBackend") !== "postgres")("no Gather, where the same settings give a plain aggregate one", async () => {
    const db = t.services.database.db;
    const control = await planWithFreeParallelism(db, sql`SELECT agent_id, sum(cost_usd) FROM fleet_index_agent_rollups_daily GROUP BY agent_id`);
    expect(control).toMatch(/Gather/);
    const now = new Date();
    for (const period of ["today", "week", "month", "all"] as const) {
      for (const tenantId of [null, "acme"]) {
        const stmt = rankPageSql(rankTerms(period, now, now.getTime()), { period, limit: 100, offset: 0, sort: "cost", tenantId }, now);
        const plan = await planWithFreeParallelism(db, stmt);
        expect(plan, `${period} tenant ${tenantId}`).not.toMatch(/Gather|Parallel/);
      }
    }
    // The function is inlined away: nothing of it is left to run per row.
    const plan = await planWithFreeParallelism(db, sql`SELECT agent_id FROM fleet_index_agent_rollups_daily WHERE voxgate_serial_plan()`);
    expect(plan).not.toMatch(/voxgate_serial_plan|Filter/);
  });
});
