import { and, type SQL, sql } from "drizzle-orm";
import { type TenantScope, tenantCondition } from "../auth/context.js";
import { fleetIndexAgentRollupsMonthly as monthly, requests, turns } from "../db/schema/index.js";
import { nextMonthMs } from "../rollups/buckets.js";

/** The sort value each source contributes (src/fleet/index-queries.ts RANK_VALUE). */
export interface RankValue {
  raw: string;
  rollup: string;
  none: string;
}

/**
 * The ranking sources of `period=all`: every monthly rollup row up to and including the current
 * month, minus the rows dated after `now` inside it (they are in its bucket but not in the window).
 * That is one row per agent and month with traffic, instead of also the current month's day rows and
 * today's hour rows. The subtraction is exact for sums; `n` counts rows (requests and attributed turns)
 * so an agent whose only rows lie after now nets to zero and is left out (HAVING sum(n) > 0).
 * Rows after now are rare (clock skew, imports), and found through the ts and turn-start indexes.
 */
export function allTimeRankSources(now: Date, scope: TenantScope, rank: RankValue): SQL {
  const end = new Date(nextMonthMs(now.getTime()));
  const neg = (expr: string) => sql.raw(rank.none === expr ? expr : `-(${expr})`);
  return sql`SELECT tenant_id, agent_id, ${sql.raw(rank.rollup)} AS v, requests + turns + probe_turns AS n FROM ${monthly}
      WHERE ${and(sql`bucket < ${end.toISOString()}::timestamptz`, tenantCondition(monthly.tenantId, scope))}
    UNION ALL SELECT tenant_id, agent_id, ${neg(rank.raw)}, -1 FROM ${requests}
      WHERE ${and(
        sql`agent_id IS NOT NULL`,
        sql`ts > ${now.toISOString()}::timestamptz AND ts < ${end.toISOString()}::timestamptz`,
        tenantCondition(requests.tenantId, scope),
      )}
    UNION ALL SELECT turns.tenant_id, turns.agent_id, ${sql.raw(rank.none)}, -1 FROM ${turns}
      WHERE ${and(
        sql`turns.agent_id IS NOT NULL`,
        sql`turns.caller_speak_start_ms > ${now.getTime()}::bigint AND turns.caller_speak_start_ms < ${end.getTime()}::bigint`,
        tenantCondition(turns.tenantId, scope),
      )}`;
}
