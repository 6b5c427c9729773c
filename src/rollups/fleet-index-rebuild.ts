import { type SQL, sql } from "drizzle-orm";
import type { Db } from "../db/client.js";
import { EXACT_SAMPLE_LIMIT } from "../stats/summary.js";
import { sketchBucketSql } from "./sketch-json.js";
import { monthStartMs, nextMonthMs } from "./buckets.js";
import { FLEET_INDEX_GRAINS, FLEET_MODALITIES, TURN_PROBE } from "./fleet-index.js";

/**
 * Rebuilds the per-agent rollups of GET /api/agents from raw request rows and attributed turns, set
 * based in SQL (one statement per grain and range): what AgentRollupBatch.addRequest/addTurn fold at
 * ingest, computed the way rebuildRollups (./rebuild.ts) builds the request rollups. Folding rows
 * through Node a day at a time took most of a bulk load's time (bench:agents seeding). The parity
 * test (test/fleet/agents-rollup-parity.test.ts) proves a rebuild reproduces what ingest maintained.
 */

type FleetGrain = (typeof FLEET_INDEX_GRAINS)[number];

const MODALITY_LIST = sql.raw(FLEET_MODALITIES.map((m) => `'${m}'`).join(", "));

/** The sketch columns' sources: TTFB per modality, then the turns' response speed. */
const SKETCHED = [...FLEET_MODALITIES, "response"] as const;

/**
 * One source's stored sketch (NULL when it has no sample) from its kb rows, pivoted into a column
 * per source (the key's row then joins its sums on plain equality).
 */
function sketchOf(m: (typeof SKETCHED)[number]): SQL {
  const of = `m = '${m}'`;
  return sql.raw(`CASE WHEN count(*) FILTER (WHERE ${of}) > 0 THEN jsonb_build_object('count', sum(n) FILTER (WHERE ${of}),
    'sum', sum(s) FILTER (WHERE ${of}), 'min', min(lo) FILTER (WHERE ${of}), 'max', max(hi) FILTER (WHERE ${of}),
    'zeros', coalesce(sum(n) FILTER (WHERE ${of} AND k IS NULL), 0),
    'buckets', coalesce(jsonb_object_agg(k::text, n) FILTER (WHERE ${of} AND k IS NOT NULL), '{}'::jsonb),
    -- raw samples while the count is within the bound, as addSample keeps them
    'samples', CASE WHEN sum(n) FILTER (WHERE ${of}) <= ${EXACT_SAMPLE_LIMIT} THEN ('[' || string_agg(vs, ',') FILTER (WHERE ${of}) || ']')::jsonb END) END AS ${m}`);
}

/**
 * One statement rebuilding `grain` from the rows in [from, to). The tenant is carried as a non-null
 * key (`''` for none, `'=' || tenant` otherwise) so the sketch parts join on plain equality.
 */
function rebuildGrainSql(grain: FleetGrain, from: number, to: number): SQL {
  const unit = sql.raw(`'${grain.unit}'`);
  const a = new Date(from).toISOString();
  const b = new Date(to).toISOString();
  // A request's TTFB and a turn's response speed, as addSample takes them: non-probe, finite, known.
  const sketchParts = grain.sketches
    ? sql`, v AS (
        SELECT bucket, tk, agent_id, modality AS m, ttfb_ms AS v FROM r
         WHERE NOT is_probe AND modality IN (${MODALITY_LIST}) AND ttfb_ms IS NOT NULL AND ttfb_ms NOT IN ('NaN', 'Infinity', '-Infinity')
        UNION ALL
        SELECT bucket, tk, agent_id, 'response', response_speed_ms::float8 FROM t WHERE NOT is_probe AND response_speed_ms IS NOT NULL
      ), kb AS (
        -- Per log bucket (k NULL: the zeros), its count, sum, min, max and raw values as JSON text.
        SELECT bucket, tk, agent_id, m, CASE WHEN v > 1e-9 THEN ${sketchBucketSql(sql`v`)} END AS k,
               count(*) AS n, sum(v) AS s, min(v) AS lo, max(v) AS hi, string_agg(v::text, ',') AS vs
          FROM v GROUP BY bucket, tk, agent_id, m, k
      ), hk AS (
        SELECT bucket, tk, agent_id, ${sql.join(SKETCHED.map(sketchOf), sql`, `)} FROM kb GROUP BY bucket, tk, agent_id
      )`
    : sql``;
  const sketchCols = grain.sketches ? sql`, stt_ttfb_hist, llm_ttfb_hist, tts_ttfb_hist, response_hist` : sql``;
  const sketchVals = grain.sketches ? sql`, hk.stt, hk.llm, hk.tts, hk.response` : sql``;
  const sketchJoin = grain.sketches ? sql`LEFT JOIN hk USING (bucket, tk, agent_id)` : sql``;
  return sql`WITH r AS (
      SELECT date_trunc(${unit}, ts, 'UTC') AS bucket, coalesce('=' || tenant_id, '') AS tk, agent_id, modality, status,
             is_probe, cost_usd, rated_price_usd, ttfb_ms
        FROM requests WHERE agent_id IS NOT NULL AND ts >= ${a}::timestamptz AND ts < ${b}::timestamptz
    ), t AS (
      SELECT date_trunc(${unit}, to_timestamp(t.caller_speak_start_ms / 1000.0), 'UTC') AS bucket, coalesce('=' || t.tenant_id, '') AS tk,
             t.agent_id, t.response_speed_ms, ${TURN_PROBE} AS is_probe
        FROM turns t WHERE t.agent_id IS NOT NULL AND t.caller_speak_start_ms >= ${from} AND t.caller_speak_start_ms < ${to}
    )${sketchParts}, sums AS (
      SELECT bucket, tk, agent_id,
             count(*) FILTER (WHERE kind = 'r') AS requests, count(*) FILTER (WHERE kind = 'r' AND is_probe) AS probe_requests,
             count(*) FILTER (WHERE kind = 'r' AND NOT is_probe AND status = 'error') AS errors,
             coalesce(sum(cost_usd), 0) AS cost_usd, coalesce(sum(rated_price_usd), 0) AS rated_price_usd,
             count(*) FILTER (WHERE kind = 't' AND NOT is_probe) AS turns, count(*) FILTER (WHERE kind = 't' AND is_probe) AS probe_turns
        FROM (SELECT bucket, tk, agent_id, 'r' AS kind, is_probe, status, cost_usd, rated_price_usd FROM r
              UNION ALL SELECT bucket, tk, agent_id, 't', is_probe, NULL, NULL, NULL FROM t) u
       GROUP BY bucket, tk, agent_id
    )
    INSERT INTO ${sql.raw(grain.table)} (bucket, tenant_id, agent_id, requests, probe_requests, errors, cost_usd, rated_price_usd, turns, probe_turns${sketchCols})
    SELECT bucket, CASE WHEN tk = '' THEN NULL ELSE substr(tk, 2) END, agent_id, s.requests, s.probe_requests, s.errors,
           s.cost_usd, s.rated_price_usd, s.turns, s.probe_turns${sketchVals}
      FROM sums s ${sketchJoin}
     ORDER BY bucket, tk, agent_id`;
}

/**
 * Rebuilds the per-agent grains for [from, to) (whole UTC days) from raw request rows and attributed
 * turns. A month bucket cut by `from` or `to` is rebuilt whole: the days of its month outside
 * [from, to) are read too, but only into the month grain (their hour and day rows are left as they are).
 */
export async function rebuildFleetIndexRollups(db: Db, from: Date, to: Date): Promise<void> {
  const monthFrom = monthStartMs(from.getTime());
  const monthTo = to.getTime() === monthStartMs(to.getTime()) ? to.getTime() : nextMonthMs(to.getTime());
  for (const grain of FLEET_INDEX_GRAINS) {
    const [a, b] = grain.unit === "month" ? [monthFrom, monthTo] : [from.getTime(), to.getTime()];
    await db.transaction(async (tx) => {
      await tx.execute(
        sql`DELETE FROM ${sql.raw(grain.table)} WHERE bucket >= ${new Date(a).toISOString()}::timestamptz AND bucket < ${new Date(b).toISOString()}::timestamptz`,
      );
      await tx.execute(rebuildGrainSql(grain, a, b));
    });
  }
}
