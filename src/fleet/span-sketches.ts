import { and, sql } from "drizzle-orm";
import { type TenantScope, tenantCondition } from "../auth/context.js";
import { type Db, queryRows } from "../db/client.js";
import { fleetIndexAgentCheckpoints as checkpoints, fleetIndexAgentRollupsDaily as daily } from "../db/schema/index.js";
import { spanRowsSql } from "../rollups/fleet-checkpoints.js";
import { agentPairKey, SKETCHES, textArray } from "../rollups/fleet-index.js";
import { decodeCachedSketch, packedSketch } from "../rollups/sketch-json.js";
import { atReportedPrecision } from "../stats/summary.js";
import { closedMonthSketches, HAS_SKETCH, mergeSketchRows, type SketchRow } from "./month-sketches.js";
import { monthsOfDays } from "./window.js";

interface SpanRow extends SketchRow {
  n: string;
  sketched_rows: string | null;
}

/**
 * The sketches of the page's agents over a running-totals span of whole days [from, to): one cached
 * row per agent instead of one per day and month, so a page of `period=all` merges a sketch per agent
 * and modality rather than ~40. The span must be built (ensureCheckpoints); an agent with no row in it
 * has no rows in the span. A missing or stale cache (a late row folded in since: its row count moved)
 * is merged from the span's month and day rows and written back only if the count is still the one
 * read, as the month cache does (src/fleet/month-sketches.ts), its samples at the reported precision
 * (atReportedPrecision: the p95s shown are unchanged) and sorted, packed (packedSketch).
 */
export async function spanSketches(db: Db, scope: TenantScope, agentIds: string[], from: Date | null, to: Date): Promise<SketchRow[]> {
  const rows = await queryRows<SpanRow>(
    db,
    sql`SELECT tenant_id, agent_id, row_count AS n, sketched_rows, stt_ttfb_hist, llm_ttfb_hist, tts_ttfb_hist, response_hist
          FROM ${checkpoints}
         WHERE ${and(
           spanRowsSql(from, to),
           sql`agent_id = ANY(${textArray(agentIds)})`,
           tenantCondition(checkpoints.tenantId, scope),
         )}`,
  );
  const fresh: SketchRow[] = [];
  const stale: SpanRow[] = [];
  for (const r of rows) {
    const cached = r.sketched_rows !== null && r.sketched_rows === r.n ? decodedRow(r) : null;
    if (cached) fresh.push(cached);
    else stale.push(r);
  }
  if (stale.length === 0) return fresh;
  const built = await mergeSpanFromRollups(db, scope, stale, from, to);
  await db.execute(sql`UPDATE ${checkpoints} c
      SET stt_ttfb_hist = v.stt_ttfb_hist, llm_ttfb_hist = v.llm_ttfb_hist, tts_ttfb_hist = v.tts_ttfb_hist,
          response_hist = v.response_hist, sketched_rows = v.n
     FROM json_to_recordset(${JSON.stringify(built)}::json)
          AS v(tenant_id text, agent_id text, n bigint, stt_ttfb_hist jsonb, llm_ttfb_hist jsonb, tts_ttfb_hist jsonb, response_hist jsonb)
    WHERE ${spanRowsSql(from, to, "c")}
      AND c.tenant_id IS NOT DISTINCT FROM v.tenant_id AND c.agent_id = v.agent_id AND c.row_count = v.n`);
  return [...fresh, ...built];
}

/** A cached row with its sketches decoded, or null when one does not decode (then it is merged again). */
function decodedRow(r: SpanRow): SketchRow | null {
  const out: SketchRow = { tenant_id: r.tenant_id, agent_id: r.agent_id, stt_ttfb_hist: null, llm_ttfb_hist: null, tts_ttfb_hist: null, response_hist: null };
  for (const c of SKETCHES) {
    const v = decodeCachedSketch(r[c]);
    if (v === undefined) return null;
    out[c] = v;
  }
  return out;
}

/**
 * Merges each stale agent's sketches over [from, to) from the rollups: closed months from the monthly
 * rows' cache, the other days from the day rows (the window's own split, monthsOfDays).
 */
async function mergeSpanFromRollups(db: Db, scope: TenantScope, stale: SpanRow[], from: Date | null, to: Date): Promise<(SketchRow & { n: string })[]> {
  const ids = [...new Set(stale.map((r) => r.agent_id))];
  const parts = await Promise.all(
    monthsOfDays({ source: "day", from, to, toInclusive: false }).map((seg) =>
      seg.source === "month"
        ? closedMonthSketches(db, scope, ids, seg.from, seg.to)
        : queryRows<SketchRow>(
            db,
            sql`SELECT tenant_id, agent_id, stt_ttfb_hist, llm_ttfb_hist, tts_ttfb_hist, response_hist FROM ${daily}
                 WHERE ${and(
                   sql`agent_id = ANY(${textArray(ids)})`,
                   seg.from === null ? undefined : sql`bucket >= ${seg.from.toISOString()}::timestamptz`,
                   sql`bucket < ${seg.to.toISOString()}::timestamptz`,
                   tenantCondition(daily.tenantId, scope),
                 )}
                   AND ${HAS_SKETCH}`,
          ),
    ),
  );
  return mergeSketchRows(
    stale.map((r) => ({ tenant_id: r.tenant_id, agent_id: r.agent_id, n: r.n })),
    (r) => agentPairKey(r.tenant_id, r.agent_id),
    parts.flat().map((r) => ({ key: agentPairKey(r.tenant_id, r.agent_id), row: r })),
    (s) => packedSketch(atReportedPrecision(s)),
  );
}
