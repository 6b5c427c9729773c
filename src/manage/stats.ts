import { moneyNumber } from "../money.js";
import { and, count, gte, inArray, lte, sql } from "drizzle-orm";
import { type TenantScope, tenantCondition } from "../auth/context.js";
import { type Db, queryRows } from "../db/client.js";
import { requests } from "../db/schema/index.js";
import { rollingWindow } from "../reports/window.js";

/** "Today" is the rolling 24 hours ending now, the same window as GET /v1/costs?period=today. */
export function todayWindow(now: Date = new Date()): { from: Date; to: Date } {
  return rollingWindow("today", now);
}

/** Money summed in SQL (numeric), rounded to 10 places, a JS number only here at the JSON edge. */
const moneySum = sql<string>`round(coalesce(sum(${requests.costUsd}), 0), 10)`;

export interface CostAndCount {
  cost_today: number;
  requests_today: number;
}

/** Cost (provider cost_usd) and request count in the window per project, for the given projects. */
export async function projectsToday(
  db: Db,
  args: TenantScope & { projectIds: string[]; window: { from: Date; to: Date } },
): Promise<Map<string, CostAndCount>> {
  const out = new Map<string, CostAndCount>();
  if (args.projectIds.length === 0) return out;
  const rows = await db
    .select({ project: requests.project, cost: moneySum, n: count() })
    .from(requests)
    .where(
      and(
        gte(requests.ts, args.window.from),
        lte(requests.ts, args.window.to),
        inArray(requests.project, args.projectIds),
        tenantCondition(requests.tenantId, args),
      ),
    )
    .groupBy(requests.project);
  for (const r of rows) out.set(r.project, { cost_today: moneyNumber(r.cost), requests_today: Number(r.n) });
  return out;
}

export interface ProjectCostsToday {
  total: number;
  requests: number;
  by_provider: Record<string, number>;
  by_model: Record<string, number>;
}

/**
 * One project's window: total, per provider and per model, in one scan with GROUPING SETS, so
 * every figure is an exact SQL numeric sum (never a float accumulated in JS).
 */
export async function projectCostsToday(db: Db, args: TenantScope & { projectId: string; window: { from: Date; to: Date } }): Promise<ProjectCostsToday> {
  const tenant = tenantCondition(requests.tenantId, args);
  type Row = { kind: string; key: string | null; cost: string; n: string | number };
  const rows = await queryRows<Row>(db, sql`
    SELECT CASE WHEN grouping(${requests.provider}) = 0 THEN 'provider'
                WHEN grouping(${requests.modelId}) = 0 THEN 'model' ELSE 'total' END AS kind,
           coalesce(${requests.provider}, ${requests.modelId}) AS key,
           ${moneySum}::text AS cost, count(*) AS n
      FROM ${requests}
     WHERE ${requests.ts} >= ${args.window.from} AND ${requests.ts} <= ${args.window.to} AND ${requests.project} = ${args.projectId}
       ${tenant ? sql`AND ${tenant}` : sql``}
     GROUP BY GROUPING SETS ((${requests.provider}), (${requests.modelId}), ())`);
  const out: ProjectCostsToday = { total: 0, requests: 0, by_provider: {}, by_model: {} };
  for (const r of rows) {
    if (r.kind === "total") {
      out.total = moneyNumber(r.cost);
      out.requests = Number(r.n);
    } else if (r.key !== null) {
      (r.kind === "provider" ? out.by_provider : out.by_model)[r.key] = moneyNumber(r.cost);
    }
  }
  return out;
}
