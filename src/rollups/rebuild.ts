import { sql } from "drizzle-orm";
import type { Db } from "../db/client.js";
import { EXACT_SAMPLE_LIMIT } from "../stats/summary.js";
import { sketchBucketSql } from "./sketch-json.js";
import { ALL_PROJECTS, HOUR_MS, ROLLUP_GRAINS, ROLLUP_KEY_COLUMNS } from "./apply.js";
import { KEY_LIST, keyMatch, rowKeySelect } from "./key-sql.js";
import { dropCheckpointsAfter } from "./fleet-checkpoints.js";
import { rebuildFleetIndexRollups } from "./fleet-index-rebuild.js";
import { rebuildBillingUsage } from "./billing-usage.js";

/** Raw samples kept in a rebuilt sketch while its count is within the bound, as ingest keeps them. */
const LIMIT = sql.raw(String(EXACT_SAMPLE_LIMIT));
const KEY = KEY_LIST;
const KEY_LIST_A = ROLLUP_KEY_COLUMNS.map((c) => `a.${c}`).join(", ");

/**
 * Rebuilds every rollup table for [from, to) from raw request rows in SQL (bulk loads, repair after
 * a manual change to `requests`). `from`/`to` must be whole UTC days so no bucket is cut in two.
 * The latency sketches are built with the same bucket index as src/stats/summary.ts (ceil(ln v / ln γ)).
 * The per-agent rollups of GET /api/agents are rebuilt too (src/rollups/fleet-index-rebuild.ts), and
 * the billing usage rollup (src/rollups/billing-usage.ts).
 */
export async function rebuildRollups(db: Db, from: Date, to: Date): Promise<void> {
  for (const grain of ROLLUP_GRAINS) {
    const table = sql.raw(grain.table);
    const unit = grain.ms === HOUR_MS ? "hour" : "day";
    const sketch = (col: string) => {
      const c = sql.raw(col);
      return sql`SELECT ${KEY}, jsonb_object_agg(k::text, n) AS buckets FROM (
          SELECT ${KEY}, ${sketchBucketSql(c)} AS k, count(*) AS n FROM base WHERE ${c} > 1e-9 GROUP BY ${KEY}, k
        ) s GROUP BY ${KEY}`;
    };
    const hist = (prefix: string, sketchCte: string) => {
      const p = sql.raw(sketchCte);
      return sql`CASE WHEN a.${sql.raw(`${prefix}_count`)} = 0 THEN NULL ELSE jsonb_build_object('count', a.${sql.raw(`${prefix}_count`)},
        'sum', a.${sql.raw(`${prefix}_sum`)}, 'min', a.${sql.raw(`${prefix}_min`)}, 'max', a.${sql.raw(`${prefix}_max`)},
        'zeros', a.${sql.raw(`${prefix}_zeros`)}, 'buckets', coalesce(${p}.buckets, '{}'::jsonb),
        'samples', a.${sql.raw(`${prefix}_samples`)}) END`;
    };
    await db.execute(sql`DELETE FROM ${table} WHERE bucket >= ${from.toISOString()}::timestamptz AND bucket < ${to.toISOString()}::timestamptz`);
    await db.execute(sql`WITH base AS (
        SELECT ${rowKeySelect(unit, grain.allProjects ? ALL_PROJECTS : null)},
          status, cost_usd, rated_price_usd, input_units, output_units, ttfb_ms, total_latency_ms
        FROM requests WHERE ts >= ${from.toISOString()}::timestamptz AND ts < ${to.toISOString()}::timestamptz
      ), agg AS (
        SELECT ${KEY}, count(*) AS requests, count(*) FILTER (WHERE status = 'error') AS errors,
          coalesce(sum(cost_usd), 0) AS cost_usd, coalesce(sum(rated_price_usd), 0) AS rated_price_usd,
          coalesce(sum(input_units), 0) AS input_units, coalesce(sum(output_units), 0) AS output_units,
          count(ttfb_ms) AS ttfb_count, coalesce(sum(ttfb_ms), 0) AS ttfb_sum, min(ttfb_ms) AS ttfb_min, max(ttfb_ms) AS ttfb_max,
          count(*) FILTER (WHERE ttfb_ms <= 1e-9) AS ttfb_zeros,
          CASE WHEN count(ttfb_ms) <= ${LIMIT} THEN jsonb_agg(ttfb_ms) FILTER (WHERE ttfb_ms IS NOT NULL) END AS ttfb_samples,
          count(total_latency_ms) AS latency_count, coalesce(sum(total_latency_ms), 0) AS latency_sum,
          min(total_latency_ms) AS latency_min, max(total_latency_ms) AS latency_max,
          count(*) FILTER (WHERE total_latency_ms <= 1e-9) AS latency_zeros,
          CASE WHEN count(total_latency_ms) <= ${LIMIT} THEN jsonb_agg(total_latency_ms) FILTER (WHERE total_latency_ms IS NOT NULL) END AS latency_samples
        FROM base GROUP BY ${KEY}
      ), tb AS (${sketch("ttfb_ms")}), lb AS (${sketch("total_latency_ms")})
      INSERT INTO ${table} (${KEY}, requests, errors, cost_usd, rated_price_usd, input_units, output_units,
        ttfb_count, ttfb_sum_ms, ttfb_hist, latency_count, latency_sum_ms, latency_hist)
      SELECT ${sql.raw(KEY_LIST_A)}, a.requests, a.errors,
        a.cost_usd, a.rated_price_usd, a.input_units, a.output_units,
        a.ttfb_count, a.ttfb_sum, ${hist("ttfb", "tb")}, a.latency_count, a.latency_sum, ${hist("latency", "lb")}
      FROM agg a
      LEFT JOIN tb ON ${keyMatch("tb", "a")}
      LEFT JOIN lb ON ${keyMatch("lb", "a")}`);
  }
  await rebuildFleetIndexRollups(db, from, to);
  await rebuildBillingUsage(db, from, to);
  // The fleet index's running totals after `from` may have changed: built again on demand.
  await dropCheckpointsAfter(db, from);
}
