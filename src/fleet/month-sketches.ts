import { and, sql } from "drizzle-orm";
import { type TenantScope, tenantCondition } from "../auth/context.js";
import { type Db, queryRows } from "../db/client.js";
import { fleetIndexAgentRollupsDaily as daily, fleetIndexAgentRollupsMonthly as monthly } from "../db/schema/index.js";
import { agentPairKey, SKETCHES, storedSketch, textArray } from "../rollups/fleet-index.js";
import { mergeStoredSketch, packedSketch } from "../rollups/sketch-json.js";
import { emptySketch, type LatencySketch } from "../stats/summary.js";

/** A per-agent row of the four latency sketches (stored JSON, or null when empty). */
export interface SketchRow {
  tenant_id: string | null;
  agent_id: string;
  stt_ttfb_hist: unknown;
  llm_ttfb_hist: unknown;
  tts_ttfb_hist: unknown;
  response_hist: unknown;
}

/** A rollup row with at least one sketch: the only rows a sketch read needs. */
export const HAS_SKETCH = sql.raw(`(${SKETCHES.map((c) => `${c} IS NOT NULL`).join(" OR ")})`);

interface MonthRow extends SketchRow {
  bucket: Date | string;
  n: string;
  sketched_rows: string | null;
}

const keyOf = (bucket: Date | string, tenantId: string | null, agentId: string) => `${new Date(bucket).getTime()}\u0000${agentPairKey(tenantId, agentId)}`;

/**
 * The sketches of the page's agents for whole closed months [from, to): one row per agent and month
 * from the monthly rollups' cache instead of one per day, so `period=all` merges ~12 sketches per agent
 * and year, not ~365. A month whose cache is missing or stale (its row count moved since: a late row)
 * is merged from its day rows here and written back, only if the count is still the one read: a
 * writer that changes the month row in between makes the write a no-op, never a stale cache.
 */
export async function closedMonthSketches(db: Db, scope: TenantScope, agentIds: string[], from: Date | null, to: Date): Promise<SketchRow[]> {
  const ids = textArray(agentIds);
  const rows = await queryRows<MonthRow>(
    db,
    sql`SELECT bucket, tenant_id, agent_id, requests + turns + probe_turns AS n, sketched_rows,
          stt_ttfb_hist, llm_ttfb_hist, tts_ttfb_hist, response_hist FROM ${monthly}
        WHERE ${and(
          sql`agent_id = ANY(${ids})`,
          from ? sql`bucket >= ${from.toISOString()}::timestamptz` : undefined,
          sql`bucket < ${to.toISOString()}::timestamptz`,
          tenantCondition(monthly.tenantId, scope),
        )}`,
  );
  const isFresh = (r: MonthRow) => r.sketched_rows !== null && r.sketched_rows === r.n;
  const stale = rows.filter((r) => !isFresh(r));
  if (stale.length === 0) return rows;
  const built = await mergeMonthsFromDays(db, scope, stale);
  await db.execute(sql`UPDATE ${monthly} m
      SET stt_ttfb_hist = v.stt_ttfb_hist, llm_ttfb_hist = v.llm_ttfb_hist, tts_ttfb_hist = v.tts_ttfb_hist,
          response_hist = v.response_hist, sketched_rows = v.n
     FROM json_to_recordset(${JSON.stringify(built)}::json)
          AS v(bucket timestamptz, tenant_id text, agent_id text, n bigint, stt_ttfb_hist jsonb, llm_ttfb_hist jsonb, tts_ttfb_hist jsonb, response_hist jsonb)
    WHERE m.bucket = v.bucket AND m.tenant_id IS NOT DISTINCT FROM v.tenant_id AND m.agent_id = v.agent_id
      AND m.requests + m.turns + m.probe_turns = v.n`);
  return [...rows.filter(isFresh), ...built];
}

/** Merges the day rows of each stale (month, tenant, agent) into one sketch row per month. */
async function mergeMonthsFromDays(db: Db, scope: TenantScope, stale: MonthRow[]): Promise<(SketchRow & { bucket: string; n: string })[]> {
  const monthMs = stale.map((r) => new Date(r.bucket).getTime());
  const first = new Date(Math.min(...monthMs));
  const last = new Date(Math.max(...monthMs));
  const days = await queryRows<SketchRow & { month: Date | string }>(
    db,
    sql`SELECT date_trunc('month', bucket, 'UTC') AS month, tenant_id, agent_id, stt_ttfb_hist, llm_ttfb_hist, tts_ttfb_hist, response_hist
          FROM ${daily}
         WHERE ${and(
           sql`agent_id = ANY(${textArray([...new Set(stale.map((r) => r.agent_id))])})`,
           sql`bucket >= ${first.toISOString()}::timestamptz AND bucket < ${last.toISOString()}::timestamptz + interval '1 month'`,
           tenantCondition(daily.tenantId, scope),
         )}
           AND ${HAS_SKETCH}`,
  );
  return mergeSketchRows(
    stale.map((r) => ({ bucket: new Date(r.bucket).toISOString(), tenant_id: r.tenant_id, agent_id: r.agent_id, n: r.n })),
    (r) => keyOf(r.bucket, r.tenant_id, r.agent_id),
    days.map((d) => ({ key: keyOf(d.month, d.tenant_id, d.agent_id), row: d })),
  );
}

/** The four stored sketches of a row. */
export type StoredSketches = { [K in (typeof SKETCHES)[number]]: unknown };

/**
 * Each target with its four sketches merged from the stored rows of its key (rows of other keys are
 * skipped: a cache that is fresh, or another tenant's agent of the same id), each stored through
 * `store` (default: packedSketch, the cache form).
 */
export function mergeSketchRows<T>(
  targets: T[],
  keyOf: (t: T) => string,
  rows: Iterable<{ key: string; row: StoredSketches }>,
  store: (s: LatencySketch) => object = packedSketch,
): (T & StoredSketches)[] {
  const acc = new Map<string, Record<(typeof SKETCHES)[number], LatencySketch>>();
  for (const t of targets) acc.set(keyOf(t), { stt_ttfb_hist: emptySketch(), llm_ttfb_hist: emptySketch(), tts_ttfb_hist: emptySketch(), response_hist: emptySketch() });
  for (const { key, row } of rows) {
    const a = acc.get(key);
    if (a) for (const c of SKETCHES) mergeStoredSketch(a[c], row[c]);
  }
  const stored = (s: LatencySketch) => (storedSketch(s) === null ? null : store(s));
  return targets.map((t) => {
    const a = acc.get(keyOf(t));
    return {
      ...t,
      stt_ttfb_hist: a ? stored(a.stt_ttfb_hist) : null,
      llm_ttfb_hist: a ? stored(a.llm_ttfb_hist) : null,
      tts_ttfb_hist: a ? stored(a.tts_ttfb_hist) : null,
      response_hist: a ? stored(a.response_hist) : null,
    };
  });
}
