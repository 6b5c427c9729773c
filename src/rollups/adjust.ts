import { type SQL, sql } from "drizzle-orm";
import type { Db } from "../db/client.js";
import { ALL_PROJECTS, HOUR_MS, ROLLUP_GRAINS } from "./apply.js";
import { adjustFleetIndexMoney } from "./fleet-index.js";

/**
 * Moves money deltas of already-rolled-up requests into every rollup table (re-rating changes a
 * stored row's price or cost after ingest folded it in). `deltas` is a SELECT yielding
 * ts, tenant_id, project, provider, model_id, modality, is_probe, agent_id, dp (price delta), dc (cost delta);
 * run it in the transaction that changes the rows, before the rows change.
 */
export async function adjustRollupMoney(tx: Db, deltas: SQL): Promise<void> {
  for (const grain of ROLLUP_GRAINS) {
    const unit = sql.raw(grain.ms === HOUR_MS ? "'hour'" : "'day'");
    const project = grain.allProjects ? sql`${ALL_PROJECTS}::text` : sql.raw("project");
    await tx.execute(sql`
      UPDATE ${sql.raw(grain.table)} rr
         SET rated_price_usd = rr.rated_price_usd + d.dp, cost_usd = rr.cost_usd + d.dc
        FROM (SELECT date_trunc(${unit}, ts, 'UTC') AS bucket, tenant_id, ${project} AS project, provider, model_id,
                     modality, is_probe, sum(dp) AS dp, sum(dc) AS dc
                FROM (${deltas}) x GROUP BY 1, 2, 3, 4, 5, 6, 7) d
       WHERE rr.bucket = d.bucket AND rr.tenant_id IS NOT DISTINCT FROM d.tenant_id AND rr.project = d.project
         AND rr.provider = d.provider AND rr.model_id = d.model_id AND rr.modality = d.modality
         AND rr.is_probe = d.is_probe`);
  }
  await adjustFleetIndexMoney(tx, deltas);
}
