import { and, desc, eq } from "drizzle-orm";
import { tenantCondition } from "../auth/context.js";
import type { Db } from "../db/client.js";
import { requests } from "../db/schema/index.js";
import { moneyNumber } from "../money.js";
import type { RequestLogRecord } from "./schemas.js";
import type { ReportScope } from "./sources.js";

/** GET /v1/logs limits (docs/api/reports.md). */
export const LOG_LIMIT_MIN = 1;
export const LOG_LIMIT_MAX = 1000;
export const LOG_LIMIT_DEFAULT = 100;

/** One row of GET /v1/logs: its type is the schema's (src/reports/schemas.ts). */
export type { RequestLogRecord } from "./schemas.js";

/** The newest request rows (raw: logs are a drill-down), probe traffic included. */
export async function requestLogs(
  db: Db,
  args: ReportScope & { limit: number; modality: string | null; status?: string | null },
): Promise<RequestLogRecord[]> {
  const rows = await db
    .select()
    .from(requests)
    .where(
      and(
        tenantCondition(requests.tenantId, args),
        args.project === null ? undefined : eq(requests.project, args.project),
        args.modality === null ? undefined : eq(requests.modality, args.modality),
        args.status === null || args.status === undefined ? undefined : eq(requests.status, args.status),
      ),
    )
    .orderBy(desc(requests.ts), desc(requests.id))
    .limit(args.limit);
  return rows.map((r) => ({
    id: r.id,
    timestamp: r.ts.toISOString(),
    project: r.project,
    modality: r.modality,
    model_id: r.modelId,
    provider: r.provider,
    cost_usd: moneyNumber(r.costUsd),
    ttfb_ms: r.ttfbMs,
    total_latency_ms: r.totalLatencyMs,
    status: r.status,
    session_id: r.sessionId,
  }));
}
