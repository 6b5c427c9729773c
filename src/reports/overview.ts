import type { Db } from "../db/client.js";
import type { EffectiveProvider } from "../manage/registry.js";
import { costReport } from "./costs.js";
import type { Overview } from "./schemas.js";
import type { ReportScope } from "./sources.js";

/** GET /api/overview: its type is the schema's (src/reports/schemas.ts). */
export type { Overview } from "./schemas.js";

/** The dashboard's headline numbers, from the same cost function as GET /v1/costs. */
export async function overview(db: Db, args: ReportScope & { providers: EffectiveProvider[]; now?: Date }): Promise<Overview> {
  const now = args.now ?? new Date();
  const [today, all] = await Promise.all([costReport(db, { ...args, period: "today", now }), costReport(db, { ...args, period: "all", now })]);
  return {
    total_requests: all.requests,
    total_cost_today: today.total,
    total_cost_all: all.total,
    active_models: Object.keys(today.by_model).length,
    providers_configured: args.providers.filter((p) => p.configured).length,
  };
}
