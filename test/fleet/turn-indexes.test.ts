import { sql, TransactionRollbackError } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PgDialect } from "drizzle-orm/pg-core";
import { queryRows } from "../../src/db/client.js";
import { attachTurns, attachTurnsSql } from "../../src/rollups/fleet-index.js";
import { createTestDatabase, type TestDatabase } from "../support/db.js";

/**
 * turns_agent_start_idx holds attributed turns only and turns_unattributed_session_idx the others
 * (migrations/0030). attachTurns runs for every ingest batch that names an agent: planned on statistics
 * taken while every turn had its agent, it used to walk the agent index's `agent_id IS NULL` range and
 * read every unattributed turn of the partition, of any session, per batch.
 */
describe("turns: attribution reads only its sessions' unattributed turns", () => {
  let tdb: TestDatabase;
  const now = Date.now();
  beforeAll(async () => {
    tdb = await createTestDatabase();
    const db = tdb.database.db;
    await db.execute(sql`INSERT INTO sessions (id, agent_id, started_at, ended_at) VALUES ('s-named', 'agent-1', now(), now())`);
    // Attributed turns, then statistics that see no turn without its agent.
    await db.execute(sql`INSERT INTO turns (session_id, turn_index, seq, caller_speak_start_ms, caller_speak_end_ms, agent_id)
      SELECT 'b' || (g / 20), g % 20, g, ${now}::bigint - g, ${now}::bigint, 'agent-2' FROM generate_series(1, 2000) g`);
    await db.execute(sql`ANALYZE turns`);
    // Then turns that never get an agent (sessions whose records name none), and three of the named session's.
    await db.execute(sql`INSERT INTO turns (session_id, turn_index, seq, caller_speak_start_ms, caller_speak_end_ms)
      SELECT 'u' || (g / 20), g % 20, g, ${now}::bigint - g, ${now}::bigint FROM generate_series(1, 5000) g`);
    await db.execute(sql`INSERT INTO turns (session_id, turn_index, seq, caller_speak_start_ms, caller_speak_end_ms)
      SELECT 's-named', g, g, ${now}::bigint - g, ${now}::bigint FROM generate_series(1, 3) g`);
  });
  afterAll(async () => {
    await tdb.drop();
  });

  it("the UPDATE's generic plan touches the named session's three turns, not the 5,000 others", async () => {
    const db = tdb.database.db;
    const { sql: text } = new PgDialect().sqlToQuery(attachTurnsSql());
    let plan: unknown;
    // Run (EXPLAIN ANALYZE executes it) and rolled back: the next test attributes the turns for real.
    await db
      .transaction(async (tx) => {
        await tx.execute(sql`SET LOCAL plan_cache_mode = force_generic_plan`);
        await tx.execute(sql.raw(`PREPARE attach_probe AS ${text}`));
        const res = await queryRows<{ "QUERY PLAN": unknown }>(tx, sql`EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE attach_probe('["s-named"]', NULL)`);
        plan = res[0]?.["QUERY PLAN"];
        // A prepared statement outlives the transaction: dropped before the connection goes back to the pool.
        await tx.execute(sql`DEALLOCATE attach_probe`);
        tx.rollback();
      })
      .catch((err: unknown) => {
        if (!(err instanceof TransactionRollbackError)) throw err;
      });
    expect(turnRowsRead(plan)).toBe(3);
  });

  it("attachTurns attributes those three turns", async () => {
    const db = tdb.database.db;
    await db.transaction((tx) => attachTurns(tx, null, ["s-named"]));
    const rows = await queryRows<{ agent_id: string | null; n: number }>(db, sql`SELECT agent_id, count(*)::int AS n FROM turns WHERE session_id = 's-named' GROUP BY 1`);
    expect(rows).toEqual([{ agent_id: "agent-1", n: 3 }]);
  });
});

/** Rows the plan's scans of turns partitions returned or filtered out (what the UPDATE read). */
function turnRowsRead(plan: unknown): number {
  let read = 0;
  const walk = (node: Record<string, unknown>) => {
    const relation = node["Relation Name"];
    if (typeof relation === "string" && relation.startsWith("turns") && node["Node Type"] !== "ModifyTable") {
      read += Number(node["Actual Rows"] ?? 0) + Number(node["Rows Removed by Filter"] ?? 0) + Number(node["Rows Removed by Index Recheck"] ?? 0);
    }
    for (const child of (node.Plans as Record<string, unknown>[] | undefined) ?? []) walk(child);
  };
  const parsed: unknown = typeof plan === "string" ? JSON.parse(plan) : plan;
  const root = (Array.isArray(parsed) ? parsed[0] : parsed) as { Plan: Record<string, unknown> };
  walk(root.Plan);
  return read;
}
