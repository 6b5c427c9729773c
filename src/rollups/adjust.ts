import { type SQL, sql } from "drizzle-orm";
import type { Db } from "../db/client.js";
import { ALL_PROJECTS, HOUR_MS, ROLLUP_GRAINS, ROW_KEY } from "./apply.js";
import { adjustFleetIndexMoney } from "./fleet-index.js";
import { keyMatch, rowKeySelect } from "./key-sql.js";

/**
 * The columns `adjustRollupMoney` needs from each changed request row, as a select list over the
 * requests alias `alias`: its ts, the rollup key's columns (`r.ts, r.tenant_id, r.project, …`) and
 * agent_id (the fleet index's per-agent rollups take the same deltas).
 */
export function rollupSourceColumns(alias: string): SQL {
  return sql.raw(["ts", ...ROW_KEY.map((k) => k.name), "agent_id"].map((c) => `${alias}.${c}`).join(", "));
}

/**
 * Moves money deltas of already-rolled-up requests into every rollup table (re-rating changes a
 * stored row's price or cost after ingest folded it in). `deltas` is a SELECT yielding
 * `rollupSourceColumns(…)`, dp (price delta) and dc (cost delta); run it in the transaction that
 * changes the rows, before the rows change.
 */
export async function adjustRollupMoney(tx: Db, deltas: SQL): Promise<void> {
  // Per-agent rows first, request rollups last: the lock order of ingest's fold statement (src/compose.ts's projection list).
  await adjustFleetIndexMoney(tx, deltas);
  for (const grain of ROLLUP_GRAINS) {
    const unit = grain.ms === HOUR_MS ? "hour" : "day";
    const groupBy = sql.raw(Array.from({ length: ROW_KEY.length + 1 }, (_, i) => i + 1).join(", "));
    await tx.execute(sql`
      UPDATE ${sql.raw(grain.table)} rr
         SET rated_price_usd = rr.rated_price_usd + d.dp, cost_usd = rr.cost_usd + d.dc
        FROM (SELECT ${rowKeySelect(unit, grain.allProjects ? ALL_PROJECTS : null)}, sum(dp) AS dp, sum(dc) AS dc
                FROM (${deltas}) x GROUP BY ${groupBy}) d
       WHERE ${keyMatch("rr", "d")}`);
  }
}
