import { z } from "zod";
import type { AuthContext } from "../auth/context.js";
import { MODALITIES } from "../config/schema.js";
import { DomainError } from "../errors.js";
import { moneyNumber } from "../money.js";
import { monthStartMs, nextMonthMs } from "../rollups/buckets.js";
import type { Config } from "../config/schema.js";
import type { Database } from "../db/client.js";
import type { Logger } from "../logging.js";
import type { RateCardStore } from "./rate-card-store.js";
import { quoteModel } from "./quote.js";
import type { GapsResponse, RateCardResponse, RuleUpsertResponse, UsageResponse } from "./responses.js";
import { CANONICAL_UNIT } from "./rule-form.js";
import { removeRule, setRule } from "./rule-service.js";
import { publicRule } from "./rule-store.js";
import { pricingGaps, usageByTenant, usageLineItems } from "./usage.js";

/**
 * The answers of the billing routes as plain functions of (services, the caller's auth, the parsed
 * query): what GET /v1/billing/* and the MCP tools both return for the same query.
 */

/** Rows matched in the catalog with no rate were recorded as priced before this release. */
export const CAVEAT_RELEASE = "0.25.6";
export const CAVEAT_BEFORE = `${CAVEAT_RELEASE}: before release ${CAVEAT_RELEASE}, rows matched in the price catalog with no rate were recorded as priced, so a window spanning that release under-reports unrated_requests`;

export const isoDate = z
  .string()
  .max(40)
  .refine((s) => /^\d{4}-\d{2}-\d{2}([T ][0-9:.]+(Z|[+-]\d{2}:?\d{2})?)?$/.test(s) && !Number.isNaN(Date.parse(s)), "an ISO-8601 date or date-time")
  .transform((s) => new Date(s));
export const optionalId = z.string().min(1).max(200).optional();
const modelId = z.string().min(3).max(400).regex(/^[^/\s]+\/\S+$/, "a full <provider>/<model> id");

export const quoteEntry = z.strictObject({
  modality: z.enum(MODALITIES),
  model: modelId,
  tenant: optionalId.nullable(),
  plan: optionalId.nullable(),
});
export const usageQuery = z.object({ tenant: optionalId, from: isoDate.optional().describe("default: the current UTC month"), to: isoDate.optional() });
export const gapsQuery = z.object({ tenant: optionalId, project: optionalId, since: isoDate.optional() });

type Auth = Pick<AuthContext, "tenantId">;

/** A tenant key names only its own tenant: another tenant's name is a 404, never its data. */
export function effectiveTenant(keyTenant: string | null, asked: string | null | undefined): string | null {
  if (keyTenant === null) return asked ?? null;
  if (asked && asked !== keyTenant) throw new DomainError("not_found", `no tenant ${asked} visible to this key`);
  return keyTenant;
}

/**
 * Prices are the operator's to set: a tenant-scoped key (a minted vk_ key has `*` scope) must not
 * change its own price, so rule changes need an operator key.
 */
function operatorOnly(keyTenant: string | null): void {
  if (keyTenant !== null) throw new DomainError("forbidden", "rate-card rules are set by the operator; a tenant-scoped key cannot change them");
}

/** A tenant key sees the general rules and its own, never another tenant's contract. */
export const visibleTo = (keyTenant: string | null) => (r: { tenant: string | null }) => keyTenant === null || r.tenant === null || r.tenant === keyTenant;

/** Default usage window: the current calendar month in UTC, [1st 00:00, 1st of next month 00:00). */
export function defaultWindow(now = new Date()): { from: Date; to: Date } {
  return { from: new Date(monthStartMs(now.getTime())), to: new Date(nextMonthMs(now.getTime())) };
}

const usd = moneyNumber;

/** GET /v1/billing/usage. */
/** What the billing answers read: the store, the rate card in memory, the pricing section and the log. */
export interface BillingDeps {
  database: Database;
  rateCard: RateCardStore;
  config: Pick<Config, "pricing">;
  log: Logger;
}

export async function billingUsage(services: BillingDeps, auth: Auth, q: z.output<typeof usageQuery>): Promise<UsageResponse> {
  const tenant = effectiveTenant(auth.tenantId, q.tenant);
  const to = q.to ?? defaultWindow().to;
  const from = q.from ?? defaultWindow(new Date(to.getTime() - 1)).from;
  if (!(from < to)) throw new DomainError("validation_failed", "from must be before to", [{ path: "from", message: "must be before to" }]);
  const w = { tenantId: auth.tenantId, tenant, from, to };
  const db = services.database.db;
  const [{ rows, total }, items] = await Promise.all([usageByTenant(db, w), tenant !== null ? usageLineItems(db, w) : Promise.resolve(null)]);
  const money = (t: { revenue: string; cost: string; margin: string }) => {
    const revenue = usd(t.revenue);
    return {
      rated_revenue_usd: revenue,
      recorded_cost_usd: usd(t.cost),
      margin_usd: usd(t.margin),
      margin_pct: revenue > 0 ? Math.round((usd(t.margin) / revenue) * 1e6) / 1e4 : null,
    };
  };
  const tenants = rows.map((t) => ({
    tenant: t.tenant,
    requests: t.requests,
    ...money(t),
    unpriced_requests: t.unpriced,
    uncosted_requests: t.uncosted,
  }));
  return {
    from: from.toISOString(),
    to: to.toISOString(),
    currency: "USD",
    tenant,
    tenants,
    totals: { requests: total.requests, ...money(total), unpriced_requests: total.unpriced, uncosted_requests: total.uncosted },
    ...(items
      ? {
          line_items: items.map((i) => ({
            modality: i.modality,
            model_id: i.modelId,
            unit: CANONICAL_UNIT[i.modality as "stt"] ?? null,
            requests: i.requests,
            input_units: i.inputUnits,
            output_units: i.outputUnits,
            ...money(i),
            unpriced_requests: i.unpriced,
            uncosted_requests: i.uncosted,
            rate_rules: i.rateRules,
          })),
        }
      : {}),
  };
}

/** GET /v1/billing/rate-card: the card in effect, with the rules visible to the key. */
export function rateCard(services: BillingDeps, auth: Auth): RateCardResponse {
  const { card } = services.rateCard.snapshot();
  return {
    default_markup: card.defaultMarkup,
    default_rule: `cost_plus:${card.defaultMarkup}`,
    gate: services.config.pricing.gate,
    precedence: "tenant > plan > model > provider > modality (most specific first; a database rule replaces the seed rule of its scope)",
    refreshed_at: services.rateCard.lastRefreshedAt()?.toISOString() ?? null,
    rules: (card.rules ?? []).filter(visibleTo(auth.tenantId)).map(publicRule),
  };
}

/** GET /v1/billing/rate-card/quote: one model's price for the key's tenant. */
export function quote(services: BillingDeps, auth: Auth, e: z.output<typeof quoteEntry>) {
  const { card, catalog } = services.rateCard.snapshot();
  const tenant = effectiveTenant(auth.tenantId, e.tenant);
  return quoteModel(card, catalog, services.config.pricing.gate, { modality: e.modality, model: e.model, tenant, plan: e.plan ?? null });
}

/** GET /v1/billing/rate-card/gaps: models recorded without a price. */
export async function gaps(services: BillingDeps, auth: Auth, q: z.output<typeof gapsQuery>): Promise<GapsResponse> {
  const tenant = effectiveTenant(auth.tenantId, q.tenant);
  const rows = await pricingGaps(services.database.db, { tenantId: auth.tenantId, tenant, project: q.project ?? null, since: q.since ?? null });
  return {
    tenant,
    project: q.project ?? null,
    since: q.since?.toISOString() ?? null,
    caveat_before: CAVEAT_BEFORE,
    gaps: rows.map((g) => ({
      model_id: g.modelId,
      modality: g.modality,
      provider: g.provider,
      requests: g.requests,
      input_units: g.inputUnits,
      output_units: g.outputUnits,
      last_seen: new Date(g.lastSeen).toISOString(),
      unknown_requests: g.unknownRequests,
      unrated_requests: g.unratedRequests,
      self_priced_requests: g.selfPricedRequests,
    })),
  };
}

const ruleDeps = (services: BillingDeps) => ({ db: services.database.db, rateCard: services.rateCard, log: services.log });

/** POST /v1/billing/rate-card/rules: upsert the database rule of a scope (operator keys; body validated by setRule). */
export async function upsertRule(services: BillingDeps, auth: AuthContext, body: unknown): Promise<RuleUpsertResponse> {
  operatorOnly(auth.tenantId);
  const { rule, created } = await setRule(ruleDeps(services), auth, body);
  return { ...publicRule(rule), created };
}

/** DELETE /v1/billing/rate-card/rules/{rule_id} (operator keys). */
export async function deleteRule(services: BillingDeps, auth: AuthContext, id: string) {
  operatorOnly(auth.tenantId);
  const rule = await removeRule(ruleDeps(services), auth, id);
  if (!rule) throw new DomainError("not_found", `no rate rule with id ${id}`);
  return { deleted: true as const, ...publicRule(rule) };
}
