import { moneyNumber } from "../money.js";
import { sql } from "drizzle-orm";
import type { Db } from "../db/client.js";
import type { CostReport } from "./schemas.js";
import { queryRows, type ReportScope, segmentsUnion } from "./sources.js";
import { type Period, reportSegments } from "./window.js";

/** The answer of GET /v1/costs: its type is the schema's (src/reports/schemas.ts). */
export type { CostLine, CostReport } from "./schemas.js";

interface GroupRow {
  provider: string | null;
  model_id: string | null;
  project: string | null;
  cost: string | null;
  requests: string | number;
  g: number;
}

/**
 * Spend over a period: whole buckets from rollups (today's from its day rows), the partial hour at the
 * window's start from raw rows, summed in SQL as numeric (exact) with one GROUPING SETS pass for the
 * total and the three breakdowns.
 */
export async function costReport(db: Db, args: ReportScope & { period: Period; now?: Date }): Promise<CostReport> {
  const segments = reportSegments(args.period, args.now ?? new Date());
  const union = segmentsUnion(segments, args, {
    rollup: sql`provider, model_id, project, cost_usd AS cost, requests AS n`,
    raw: sql`provider, model_id, project, coalesce(cost_usd, 0) AS cost, 1::bigint AS n`,
  });
  if (union === null) throw new Error("a report window always has its today segment");
  const rows = await queryRows<GroupRow>(db, sql`SELECT provider, model_id, project, sum(cost)::text AS cost,
      sum(n)::bigint AS requests, GROUPING(provider, model_id, project) AS g
    FROM (${union}) x GROUP BY GROUPING SETS ((provider), (model_id), (project), ())`);
  const report: CostReport = { period: args.period, project: args.project, total: 0, requests: 0, by_provider: {}, by_model: {}, by_project: {} };
  for (const r of rows) {
    const line = { cost: moneyNumber(r.cost), requests: Number(r.requests) };
    const g = Number(r.g);
    if (g === 7) {
      report.total = line.cost;
      report.requests = line.requests;
    } else if (g === 3 && r.provider !== null) report.by_provider[r.provider] = line;
    else if (g === 5 && r.model_id !== null) report.by_model[r.model_id] = line;
    else if (g === 6 && r.project !== null) report.by_project[r.project] = line;
  }
  return report;
}
