import { and, type SQL, sql } from "drizzle-orm";
import { type TenantScope, tenantCondition } from "../auth/context.js";
import type { Db } from "../db/client.js";
import { requests } from "../db/schema/index.js";
import { moneyNumber, sumMoney } from "../money.js";

/**
 * Read-path queries of /v1/billing/usage, /v1/billing/rate-card/models and /v1/billing/rate-card/gaps. Money is summed in SQL as numeric (exact at 10
 * decimals) and handed back as text; routes convert with Number() only at the JSON edge.
 */

export interface UsageWindow extends TenantScope {
  from: Date;
  to: Date;
  /** An operator's `tenant` filter (a tenant key is already confined by tenantId). */
  tenant?: string | null;
}

export interface UsageTotals {
  requests: number;
  revenue: string;
  cost: string;
  margin: string;
  unpriced: number;
  uncosted: number;
}

const r = requests;
const totals = {
  requests: sql<number>`count(*)::int`,
  revenue: sql<string>`coalesce(sum(${r.ratedPriceUsd}), 0)::text`,
  cost: sql<string>`coalesce(sum(${r.costUsd}), 0)::text`,
  margin: sql<string>`(coalesce(sum(${r.ratedPriceUsd}), 0) - coalesce(sum(${r.costUsd}), 0))::text`,
  unpriced: sql<number>`(count(*) filter (where ${r.ratedPriceUsd} is null))::int`,
  uncosted: sql<number>`(count(*) filter (where ${r.costUsd} is null))::int`,
};

function windowWhere(w: UsageWindow): SQL | undefined {
  return and(
    sql`${r.ts} >= ${w.from.toISOString()}`,
    sql`${r.ts} < ${w.to.toISOString()}`,
    tenantCondition(r.tenantId, w),
    w.tenant ? sql`${r.tenantId} = ${w.tenant}` : undefined,
  );
}

/**
 * Revenue, cost and margin per tenant over [from, to), largest revenue first, and the grand total.
 * Each tenant's sums are the database's exact numeric sums; the total adds those few decimal strings
 * exactly (BigInt), never as floats. (A grouping-sets total forced a sort of every row: 1.5× slower.)
 */
export async function usageByTenant(db: Db, w: UsageWindow): Promise<{ rows: (UsageTotals & { tenant: string | null })[]; total: UsageTotals }> {
  const rows = await db
    .select({ tenant: r.tenantId, ...totals })
    .from(r)
    .where(windowWhere(w))
    .groupBy(r.tenantId)
    .orderBy(sql`coalesce(sum(${r.ratedPriceUsd}), 0) desc`, r.tenantId);
  const total: UsageTotals = {
    requests: rows.reduce((a, t) => a + t.requests, 0),
    revenue: sumMoney(rows.map((t) => t.revenue)),
    cost: sumMoney(rows.map((t) => t.cost)),
    margin: sumMoney(rows.map((t) => t.margin)),
    unpriced: rows.reduce((a, t) => a + t.unpriced, 0),
    uncosted: rows.reduce((a, t) => a + t.uncosted, 0),
  };
  return { rows, total };
}

/** One tenant's line items per (modality, model), with units and the audit tokens that rated them. */
export async function usageLineItems(db: Db, w: UsageWindow) {
  return db
    .select({
      modality: r.modality,
      modelId: r.modelId,
      ...totals,
      inputUnits: sql<number>`coalesce(sum(${r.inputUnits}), 0)::float8`,
      outputUnits: sql<number>`coalesce(sum(${r.outputUnits}), 0)::float8`,
      rateRules: sql<string[]>`coalesce(array_agg(distinct ${r.rateRule}) filter (where ${r.rateRule} is not null), '{}')`,
    })
    .from(r)
    .where(windowWhere(w))
    .groupBy(r.modality, r.modelId)
    .orderBy(sql`coalesce(sum(${r.ratedPriceUsd}), 0) desc`, r.modality, r.modelId);
}

export interface GapsQuery extends TenantScope {
  tenant?: string | null;
  project?: string | null;
  since?: Date | null;
}

/**
 * Models that ran and could not be priced by the collector, heaviest (most requests) first: unknown and
 * unrated rows, and self-priced rows (a tenant's records rated on the cost the tenant reported, for
 * want of a collector cost). Only billable rows count: not errors, and some units moved.
 */
export async function pricingGaps(db: Db, q: GapsQuery) {
  return db
    .select({
      modality: r.modality,
      modelId: r.modelId,
      provider: sql<string>`min(${r.provider})`,
      requests: sql<number>`count(*)::int`,
      inputUnits: sql<number>`coalesce(sum(${r.inputUnits}), 0)::float8`,
      outputUnits: sql<number>`coalesce(sum(${r.outputUnits}), 0)::float8`,
      lastSeen: sql<string>`max(${r.ts})`,
      unknownRequests: sql<number>`(count(*) filter (where ${r.pricing} = 'unknown'))::int`,
      unratedRequests: sql<number>`(count(*) filter (where ${r.pricing} = 'unrated'))::int`,
      selfPricedRequests: sql<number>`(count(*) filter (where ${r.pricing} = 'self_priced'))::int`,
    })
    .from(r)
    .where(
      and(
        sql`${r.pricing} in ('unknown', 'unrated', 'self_priced')`,
        sql`${r.status} <> 'error'`,
        sql`(coalesce(${r.inputUnits}, 0) > 0 or coalesce(${r.outputUnits}, 0) > 0)`,
        tenantCondition(r.tenantId, q),
        q.tenant ? sql`${r.tenantId} = ${q.tenant}` : undefined,
        q.project ? sql`${r.project} = ${q.project}` : undefined,
        q.since ? sql`${r.ts} >= ${q.since.toISOString()}` : undefined,
      ),
    )
    .groupBy(r.modality, r.modelId)
    .orderBy(sql`count(*) desc`, sql`coalesce(sum(${r.inputUnits}), 0) + coalesce(sum(${r.outputUnits}), 0) desc`, r.modelId);
}

/** Distinct models seen in telemetry (GET /v1/billing/rate-card/models). */
export async function seenModels(db: Db, scope: TenantScope & { tenant?: string | null }) {
  return db
    .select({
      modality: r.modality,
      modelId: r.modelId,
      provider: r.provider,
      requests: sql<number>`count(*)::int`,
      lastSeen: sql<string>`max(${r.ts})`,
    })
    .from(r)
    .where(and(tenantCondition(r.tenantId, scope), scope.tenant ? sql`${r.tenantId} = ${scope.tenant}` : undefined))
    .groupBy(r.modality, r.modelId, r.provider)
    .orderBy(r.modality, r.modelId, r.provider);
}

/** Recorded totals per model id of one provider (reconcile); money summed as numeric. */
export async function recordedByModel(db: Db, q: { provider: string; from?: Date | null; to?: Date | null }) {
  const rows = await db
    .select({
      modelId: r.modelId,
      requests: sql<number>`count(*)::int`,
      costUsd: sql<string>`coalesce(sum(${r.costUsd}), 0)::text`,
      inputTokens: sql<number>`coalesce(sum(${r.inputTokens}), 0)::float8`,
      outputTokens: sql<number>`coalesce(sum(${r.outputTokens}), 0)::float8`,
      audioSeconds: sql<number>`coalesce(sum(${r.audioSeconds}), 0)::float8`,
      characters: sql<number>`coalesce(sum(${r.characters}), 0)::float8`,
    })
    .from(r)
    .where(
      and(
        sql`starts_with(${r.modelId}, ${`${q.provider}/`})`,
        q.from ? sql`${r.ts} >= ${q.from.toISOString()}` : undefined,
        q.to ? sql`${r.ts} < ${q.to.toISOString()}` : undefined,
      ),
    )
    .groupBy(r.modelId)
    .orderBy(r.modelId);
  return rows.map((x) => ({ ...x, costUsd: moneyNumber(x.costUsd) }));
}
