import { and, type SQL, sql } from "drizzle-orm";
import { type TenantScope, tenantCondition } from "../auth/context.js";
import { type Db, queryRows } from "../db/client.js";
import { billingUsageDaily, requests } from "../db/schema/index.js";
import { ceilTo, DAY_MS, floorTo } from "../rollups/buckets.js";
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
const b = billingUsageDaily;

/**
 * The rows usage is summed from: whole UTC days of the window from the billing usage rollup (it
 * outlives the raw rows retention removes), the partial days at its edges from raw request rows. Each
 * source row carries the rollup's sums, so the reports group them the same way whatever their origin.
 */
function usageSource(w: UsageWindow): SQL {
  const from = w.from.getTime();
  const to = w.to.getTime();
  const dayStart = ceilTo(from, DAY_MS);
  const dayEnd = floorTo(to, DAY_MS);
  const rawRanges: [number, number][] = dayStart < dayEnd ? [[from, dayStart], [dayEnd, to]] : [[from, to]];
  const parts: SQL[] = [];
  const tenant = (col: typeof r.tenantId | typeof b.tenantId) => and(tenantCondition(col, w), w.tenant ? sql`${col} = ${w.tenant}` : undefined);
  if (dayStart < dayEnd) {
    parts.push(sql`select ${b.tenantId} as tenant_id, ${b.modality} as modality, ${b.modelId} as model_id, ${b.rateRule} as rate_rule,
        ${b.requests} as requests, ${b.ratedPriceUsd} as rated_price_usd, ${b.costUsd} as cost_usd, ${b.unpriced} as unpriced,
        ${b.uncosted} as uncosted, ${b.inputUnits} as input_units, ${b.outputUnits} as output_units
      from ${b} where ${and(sql`${b.bucket} >= ${new Date(dayStart).toISOString()}`, sql`${b.bucket} < ${new Date(dayEnd).toISOString()}`, tenant(b.tenantId))}`);
  }
  for (const [lo, hi] of rawRanges) {
    if (!(lo < hi)) continue;
    parts.push(sql`select ${r.tenantId} as tenant_id, ${r.modality} as modality, ${r.modelId} as model_id, ${r.rateRule} as rate_rule,
        count(*) as requests, coalesce(sum(${r.ratedPriceUsd}), 0) as rated_price_usd, coalesce(sum(${r.costUsd}), 0) as cost_usd,
        count(*) filter (where ${r.ratedPriceUsd} is null) as unpriced, count(*) filter (where ${r.costUsd} is null) as uncosted,
        coalesce(sum(${r.inputUnits}::numeric), 0) as input_units, coalesce(sum(${r.outputUnits}::numeric), 0) as output_units
      from ${r} where ${and(sql`${r.ts} >= ${new Date(lo).toISOString()}`, sql`${r.ts} < ${new Date(hi).toISOString()}`, tenant(r.tenantId))}
      group by 1, 2, 3, 4`);
  }
  return sql`(${sql.join(parts, sql` union all `)}) u`;
}

const totals = {
  requests: sql<number>`coalesce(sum(u.requests), 0)::int`,
  revenue: sql<string>`coalesce(sum(u.rated_price_usd), 0)::text`,
  cost: sql<string>`coalesce(sum(u.cost_usd), 0)::text`,
  margin: sql<string>`(coalesce(sum(u.rated_price_usd), 0) - coalesce(sum(u.cost_usd), 0))::text`,
  unpriced: sql<number>`coalesce(sum(u.unpriced), 0)::int`,
  uncosted: sql<number>`coalesce(sum(u.uncosted), 0)::int`,
};

/**
 * Revenue, cost and margin per tenant over [from, to), largest revenue first, and the grand total.
 * Each tenant's sums are the database's exact numeric sums; the total adds those few decimal strings
 * exactly (BigInt), never as floats.
 */
export async function usageByTenant(db: Db, w: UsageWindow): Promise<{ rows: (UsageTotals & { tenant: string | null })[]; total: UsageTotals }> {
  const rows = await queryRows<UsageTotals & { tenant: string | null }>(
    db,
    sql`select u.tenant_id as tenant, ${sql.join(Object.entries(totals).map(([k, v]) => sql`${v} as ${sql.identifier(k)}`), sql`, `)}
      from ${usageSource(w)} group by u.tenant_id order by coalesce(sum(u.rated_price_usd), 0) desc, u.tenant_id`,
  );
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

export interface UsageLineItem extends UsageTotals {
  modality: string;
  modelId: string;
  inputUnits: number;
  outputUnits: number;
  rateRules: string[];
}

/** One tenant's line items per (modality, model), with units and the audit tokens that rated them. */
export async function usageLineItems(db: Db, w: UsageWindow): Promise<UsageLineItem[]> {
  return queryRows<UsageLineItem>(
    db,
    sql`select u.modality as modality, u.model_id as "modelId",
        ${sql.join(Object.entries(totals).map(([k, v]) => sql`${v} as ${sql.identifier(k)}`), sql`, `)},
        coalesce(sum(u.input_units), 0)::float8 as "inputUnits", coalesce(sum(u.output_units), 0)::float8 as "outputUnits",
        coalesce(array_agg(distinct u.rate_rule) filter (where u.rate_rule is not null), '{}') as "rateRules"
      from ${usageSource(w)} group by u.modality, u.model_id
      order by coalesce(sum(u.rated_price_usd), 0) desc, u.modality, u.model_id`,
  );
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
