import { and, eq } from "drizzle-orm";
import { z } from "zod";
import { ownedBy, type TenantScope, tenantCondition } from "../auth/context.js";
import type { Db } from "../db/client.js";
import { requests } from "../db/schema/index.js";
import { DomainError } from "../errors.js";
import { moneyNumber } from "../money.js";
import { logsQuery } from "../reports/query.js";
import type { RequestLogDetail } from "./schemas.js";

/** Status values a request row carries (docs/api/ingest.md). */
export const LOG_STATUSES = ["success", "error", "fallback"] as const;

/** GET /api/logs: the /v1/logs query plus a status filter. */
export const dashboardLogsQuery = logsQuery.extend({
  status: z
    .enum(LOG_STATUSES)
    .optional()
    .transform((v) => v ?? null),
});

/** One request row as GET /api/logs/{id} answers it (type from src/dashboard/schemas.ts). */
export type { RequestLogDetail } from "./schemas.js";

const UUID = z.uuid();

/**
 * One request row by id, within the caller's tenant. Ids are unique per tenant, so an operator may
 * find one per tenant: `tenant` (null = the untenanted rows) picks one, without it two are a 409.
 */
export async function requestLogDetail(db: Db, scope: TenantScope, id: string, tenant: string | null | undefined): Promise<RequestLogDetail> {
  const missing = new DomainError("not_found", `no request ${id}`);
  if (!UUID.safeParse(id).success) throw missing;
  const rows = await db
    .select()
    .from(requests)
    .where(and(eq(requests.id, id), tenantCondition(requests.tenantId, scope), tenant === undefined ? undefined : ownedBy(requests.tenantId, tenant)))
    .limit(10);
  const [r] = rows;
  if (!r) throw missing;
  if (rows.length > 1) {
    throw new DomainError("conflict", `request id ${id} was used by ${rows.length} tenants; add ?tenant=<tenant_id> (?tenant= for the untenanted one)`, {
      tenants: rows.map((x) => x.tenantId),
    });
  }
  return {
    id: r.id,
    timestamp: r.ts.toISOString(),
    tenant_id: r.tenantId,
    project: r.project,
    session_id: r.sessionId,
    room_name: r.roomName,
    agent_id: r.agentId,
    modality: r.modality,
    model_id: r.modelId,
    provider: r.provider,
    status: r.status,
    error_message: r.errorMessage,
    fallback_from: r.fallbackFrom,
    ttfb_ms: r.ttfbMs,
    total_latency_ms: r.totalLatencyMs,
    cost_usd: moneyNumber(r.costUsd),
    rated_price_usd: r.ratedPriceUsd === null ? null : moneyNumber(r.ratedPriceUsd),
    rate_rule: r.rateRule,
    pricing: r.pricing,
    is_probe: r.isProbe,
    units: {
      input_tokens: r.inputTokens,
      output_tokens: r.outputTokens,
      cached_input_tokens: r.cachedInputTokens,
      audio_seconds: r.audioSeconds,
      characters: r.characters,
      input_units: r.inputUnits,
      output_units: r.outputUnits,
    },
    metadata: r.metadata ?? null,
  };
}
