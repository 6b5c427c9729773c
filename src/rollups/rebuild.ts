import { sql } from "drizzle-orm";
import type { Db } from "../db/client.js";
import { EXACT_SAMPLE_LIMIT, SKETCH_RELATIVE_ACCURACY } from "../stats/summary.js";
import { ALL_PROJECTS, HOUR_MS, ROLLUP_GRAINS } from "./apply.js";
import { rebuildFleetIndexRollups } from "./fleet-index.js";

const LN_GAMMA = Math.log((1 + SKETCH_RELATIVE_ACCURACY) / (1 - SKETCH_RELATIVE_ACCURACY));
/** Raw samples kept in a rebuilt sketch while its count is within the bound, as ingest keeps them. */
const LIMIT = sql.raw(String(EXACT_SAMPLE_LIMIT));
const KEY = sql.raw("bucket, tenant_id, project, provider, model_id, modality, is_probe");

/**
 * Rebuilds every rollup table for [from, to) from raw request rows in SQL (bulk loads, repair after
 * a manual change to `requests`). `from`/`to` must be whole UTC days so no bucket is cut in two.
 * The latency sketches are built with the same bucket index as src/stats/summary.ts (ceil(ln v / ln γ)).
 * The per-agent rollups of GET /api/agents are rebuilt too (src/rollups/fleet-index.ts).
 */
export async function rebuildRollups(db: Db, from: Date, to: Date): Promise<void> {
  for (const grain of ROLLUP_GRAINS) {
    const table = sql.raw(grain.table);
    const unit = grain.ms === HOUR_MS ? "hour" : "day";
    const project = grain.allProjects ? sql`${ALL_PROJECTS}::text` : sql.raw("project");
    const sketch = (col: string) => {
      const c = sql.raw(col);
      return sql`SELECT ${KEY}, jsonb_object_agg(k::text, n) AS buckets FROM (
          SELECT ${KEY}, ceil(ln(${c}) / ${LN_GAMMA}::float8)::int AS k, count(*) AS n FROM base WHERE ${c} > 1e-9 GROUP BY ${KEY}, k
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
        SELECT date_trunc(${unit}, ts, 'UTC') AS bucket, tenant_id, ${project} AS project, provider, model_id, modality, is_probe,
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
      SELECT a.bucket, a.tenant_id, a.project, a.provider, a.model_id, a.modality, a.is_probe, a.requests, a.errors,
        a.cost_usd, a.rated_price_usd, a.input_units, a.output_units,
        a.ttfb_count, a.ttfb_sum, ${hist("ttfb", "tb")}, a.latency_count, a.latency_sum, ${hist("latency", "lb")}
      FROM agg a
      LEFT JOIN tb ON tb.bucket = a.bucket AND coalesce(tb.tenant_id, '') = coalesce(a.tenant_id, '') AND tb.tenant_id IS NOT DISTINCT FROM a.tenant_id AND tb.project = a.project
        AND tb.provider = a.provider AND tb.model_id = a.model_id AND tb.modality = a.modality AND tb.is_probe = a.is_probe
      LEFT JOIN lb ON lb.bucket = a.bucket AND coalesce(lb.tenant_id, '') = coalesce(a.tenant_id, '') AND lb.tenant_id IS NOT DISTINCT FROM a.tenant_id AND lb.project = a.project
        AND lb.provider = a.provider AND lb.model_id = a.model_id AND lb.modality = a.modality AND lb.is_probe = a.is_probe`);
  }
  await rebuildFleetIndexRollups(db, from, to);
}
