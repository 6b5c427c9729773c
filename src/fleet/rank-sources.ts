import { and, type SQL, sql } from "drizzle-orm";
import { type TenantScope, tenantCondition } from "../auth/context.js";
import { fleetIndexAgentCheckpoints as checkpoints, fleetIndexAgentRollups, fleetIndexAgentRollupsDaily, requests, turns } from "../db/schema/index.js";
import { RANK_EXPR } from "../db/schema/fleet-index-agent-rollups.js";
import { spanRowsSql } from "../rollups/fleet-checkpoints.js";
import type { RankTerm } from "./rank-plan.js";

/** The sort value each source contributes (src/fleet/index-queries.ts RANK_VALUE). */
export interface RankValue {
  raw: string;
  rollup: string;
  none: string;
}

const iso = (d: Date) => sql`${d.toISOString()}::timestamptz`;

/**
 * The ranking's sources, one SELECT per term of the plan (src/fleet/rank-plan.ts), each giving
 * (tenant_id, agent_id, v = the sort value, n = rows) with the term's sign applied, every one confined by
 * tenantCondition. Summed per agent, v is the window's sort value and n its rows (an agent is in the
 * window when n > 0). A source that adds nothing to v gives NULL (sum() builds no state for it).
 * Counts are float8, exact for whole numbers below 2^53: sum(float8) keeps its state by value, where
 * sum(bigint) allocates a numeric state per agent (≈ 5 ms of 10k agents' aggregate, measured).
 */
export function rankSources(terms: RankTerm[], scope: TenantScope, rank: RankValue): SQL {
  const parts = terms.flatMap((term): SQL[] => {
    const signed = (expr: string) => sql.raw(term.sign === 1 || expr === rank.none ? expr : `-(${expr})`);
    const one = sql.raw(term.sign === 1 ? "1::float8" : "-1::float8");
    if (term.kind === "checkpoint") {
      return [
        sql`SELECT tenant_id, agent_id, ${signed(rank.rollup)} AS v, ${signed(RANK_EXPR.spanRows)} AS n FROM ${checkpoints}
          WHERE ${and(
            spanRowsSql(term.from, term.at),
            tenantCondition(checkpoints.tenantId, scope),
          )}`,
      ];
    }
    if (term.kind === "hour" || term.kind === "day") {
      const t = term.kind === "hour" ? fleetIndexAgentRollups : fleetIndexAgentRollupsDaily;
      const where = and(term.from ? sql`bucket >= ${iso(term.from)}` : undefined, sql`bucket < ${iso(term.to)}`, tenantCondition(t.tenantId, scope));
      return [sql`SELECT tenant_id, agent_id, ${signed(rank.rollup)} AS v, ${signed(RANK_EXPR.rollupRows)} AS n FROM ${t} WHERE ${where}`];
    }
    const range = (col: SQL, v: (d: Date) => SQL) =>
      sql`${col} ${sql.raw(term.fromInclusive ? ">=" : ">")} ${v(term.from)} AND ${col} ${sql.raw(term.toInclusive ? "<=" : "<")} ${v(term.to)}`;
    return [
      sql`SELECT tenant_id, agent_id, ${signed(rank.raw)} AS v, ${one} AS n FROM ${requests}
        WHERE ${and(sql`agent_id IS NOT NULL`, range(sql`ts`, iso), tenantCondition(requests.tenantId, scope))}`,
      sql`SELECT turns.tenant_id, turns.agent_id, ${sql.raw(rank.none)} AS v, ${one} AS n FROM ${turns}
        WHERE ${and(
          sql`turns.agent_id IS NOT NULL`,
          range(sql`turns.caller_speak_start_ms`, (d) => sql`${d.getTime()}::bigint`),
          tenantCondition(turns.tenantId, scope),
        )}`,
    ];
  });
  return sql.join(parts, sql` UNION ALL `);
}
