import { z } from "zod";
import type { Config } from "../config/schema.js";
import type { Database } from "../db/client.js";
import type { Logger } from "../logging.js";
import type { RateCardStore } from "./rate-card-store.js";
import { MODALITIES, rateRuleInputSchema } from "../config/schema.js";
import type { AppEnv } from "../http/app-env.js";
import { readJson } from "../http/body.js";
import { ApiError, parseOrThrow } from "../http/errors.js";
import { contractRouter, defineRoute } from "../http/openapi.js";
import { moneyNumber } from "../money.js";
import { lookupCatalog } from "./catalog.js";
import { quoteModel } from "./quote.js";
import { resolveRules } from "./rate.js";
import { removeRule, setRule } from "./rule-service.js";
import { listDbRules, publicRule } from "./rule-store.js";
import { CANONICAL_UNIT } from "./rule-form.js";
import { pricingGaps, seenModels, usageByTenant, usageLineItems } from "./usage.js";
import { monthStartMs, nextMonthMs } from "../rollups/buckets.js";
import type { GapsResponse, QuoteBatchResponse, RateCardResponse, RuleListResponse, RuleUpsertResponse, UsageResponse } from "./responses.js";
import {
  GapsSchema,
  QuoteBatchSchema,
  QuoteSchema,
  RateCardModelsSchema,
  RateCardSchema,
  RuleDeletedSchema,
  RuleListSchema,
  RuleUpsertSchema,
  UsageSchema,
} from "./schemas.js";

/** Most models one POST quote may price (docs/api/billing.md); more is a 422, never a silent truncation. */
export const QUOTE_BATCH_MAX = 200;

/** Rows matched in the catalog with no rate were recorded as priced before this release. */
export const CAVEAT_RELEASE = "0.25.6";
export const CAVEAT_BEFORE = `${CAVEAT_RELEASE}: before release ${CAVEAT_RELEASE}, rows matched in the price catalog with no rate were recorded as priced, so a window spanning that release under-reports unrated_requests`;

const isoDate = z
  .string()
  .max(40)
  .refine((s) => /^\d{4}-\d{2}-\d{2}([T ][0-9:.]+(Z|[+-]\d{2}:?\d{2})?)?$/.test(s) && !Number.isNaN(Date.parse(s)), "an ISO-8601 date or date-time")
  .transform((s) => new Date(s));
const optionalId = z.string().min(1).max(200).optional();
const modelId = z.string().min(3).max(400).regex(/^[^/\s]+\/\S+$/, "a full <provider>/<model> id");

const quoteEntry = z.strictObject({
  modality: z.enum(MODALITIES),
  model: modelId,
  tenant: optionalId.nullable(),
  plan: optionalId.nullable(),
});

/** A tenant key names only its own tenant: another tenant's name is a 404, never its data. */
function effectiveTenant(keyTenant: string | null, asked: string | null | undefined): string | null {
  if (keyTenant === null) return asked ?? null;
  if (asked && asked !== keyTenant) throw new ApiError("not_found", `no tenant ${asked} visible to this key`);
  return keyTenant;
}

/**
 * Prices are the operator's to set: a tenant-scoped key (a minted vk_ key has `*` scope) must not
 * change its own price, so rule changes need an operator key.
 */
function operatorOnly(keyTenant: string | null): void {
  if (keyTenant !== null) throw new ApiError("forbidden", "rate-card rules are set by the operator; a tenant-scoped key cannot change them");
}

/** A tenant key sees the general rules and its own, never another tenant's contract. */
const visibleTo = (keyTenant: string | null) => (r: { tenant: string | null }) => keyTenant === null || r.tenant === null || r.tenant === keyTenant;

/** Default usage window: the current calendar month in UTC, [1st 00:00, 1st of next month 00:00). */
export function defaultWindow(now = new Date()): { from: Date; to: Date } {
  return { from: new Date(monthStartMs(now.getTime())), to: new Date(nextMonthMs(now.getTime())) };
}

const usd = moneyNumber;

/** Billing routes (docs/api/billing.md): usage, rate card, models, quotes, gaps, override rules. */
/** Rating and billing reads: the store, the rate card in memory, the pricing section and the log. */
export interface BillingRouteDeps {
  database: Database;
  rateCard: RateCardStore;
  config: Pick<Config, "pricing">;
  log: Logger;
}

export function billingRoutes(deps: BillingRouteDeps) {
  const r = contractRouter();
  const tag = "billing";
  const otherTenant = { 404: { description: "a tenant key named another tenant" } };

  defineRoute(r, {
    method: "get", path: "/v1/billing/usage", tag, summary: "Rated revenue, recorded cost and margin by tenant (line items for one tenant)", scope: "read",
    query: z.object({ tenant: optionalId, from: isoDate.optional().describe("default: the current UTC month"), to: isoDate.optional() }),
    responses: { 200: { description: "usage", schema: UsageSchema }, ...otherTenant },
  }, async (c, { query: q }) => {
    const { auth } = c.var;
    const tenant = effectiveTenant(auth.tenantId, q.tenant);
    const to = q.to ?? defaultWindow().to;
    const from = q.from ?? defaultWindow(new Date(to.getTime() - 1)).from;
    if (!(from < to)) throw new ApiError("validation_failed", "from must be before to", [{ path: "from", message: "must be before to" }]);
    const w = { tenantId: auth.tenantId, tenant, from, to };
    const db = deps.database.db;
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
    return c.json({
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
    } satisfies UsageResponse);
  });

  defineRoute(r, {
    method: "get", path: "/v1/billing/rate-card", tag, summary: "The rate card: default markup, gate and the rules visible to the key", scope: "read",
    responses: { 200: { description: "the card", schema: RateCardSchema } },
  }, (c) => {
    const { card } = deps.rateCard.snapshot();
    return c.json({
      default_markup: card.defaultMarkup,
      default_rule: `cost_plus:${card.defaultMarkup}`,
      gate: deps.config.pricing.gate,
      precedence: "tenant > plan > model > provider > modality (most specific first; a database rule replaces the seed rule of its scope)",
      refreshed_at: deps.rateCard.lastRefreshedAt()?.toISOString() ?? null,
      rules: (card.rules ?? []).filter(visibleTo(c.var.auth.tenantId)).map(publicRule),
    } satisfies RateCardResponse);
  });

  defineRoute(r, {
    method: "get", path: "/v1/billing/rate-card/models", tag, summary: "Models seen, with their voice price and the rule that prices them", scope: "read",
    query: z.object({ tenant: optionalId, plan: optionalId }),
    responses: { 200: { description: "models", schema: RateCardModelsSchema }, ...otherTenant },
  }, async (c, { query: q }) => {
    const { auth } = c.var;
    const tenant = effectiveTenant(auth.tenantId, q.tenant);
    const { card, catalog } = deps.rateCard.snapshot();
    const rows = await seenModels(deps.database.db, { tenantId: auth.tenantId, tenant });
    const models = rows.map((m) => {
      const modality = m.modality as "stt" | "llm" | "tts";
      const entry = lookupCatalog(catalog, m.modelId, m.provider, modality);
      const res = resolveRules(card, { modality, modelId: m.modelId, provider: m.provider, tenantId: tenant, plan: q.plan ?? null });
      const voice = entry?.rated ? (modality === "llm" ? entry.inputPriceUsd : entry.priceUsd) : null;
      return {
        model_id: m.modelId,
        modality,
        provider: m.provider,
        unit: CANONICAL_UNIT[modality] ?? null,
        voice_price_usd: voice,
        ...(modality === "llm" ? { voice_output_price_usd: entry?.rated ? entry.outputPriceUsd : null } : {}),
        catalog: entry ? (entry.rated ? "rated" : "unrated") : "unknown",
        effective: res.price ? publicRule(res.price) : null,
        cost_basis: res.cost ? publicRule(res.cost) : null,
        requests: m.requests,
        last_seen: new Date(m.lastSeen).toISOString(),
      };
    });
    return c.json({ tenant, default_markup: card.defaultMarkup, models });
  });

  const quote = (c: { var: AppEnv["Variables"] }, e: z.infer<typeof quoteEntry>) => {
    const { card, catalog } = deps.rateCard.snapshot();
    const tenant = effectiveTenant(c.var.auth.tenantId, e.tenant);
    return quoteModel(card, catalog, deps.config.pricing.gate, { modality: e.modality, model: e.model, tenant, plan: e.plan ?? null });
  };

  defineRoute(r, {
    method: "get", path: "/v1/billing/rate-card/quote", tag, summary: "Quote one model", scope: "read",
    query: quoteEntry, responses: { 200: { description: "the quote", schema: QuoteSchema }, ...otherTenant },
  }, (c, { query }) => c.json(quote(c, query)));

  defineRoute(r, {
    method: "post", path: "/v1/billing/rate-card/quote", tag, summary: `Quote up to ${QUOTE_BATCH_MAX} models`, scope: "read",
    body: z.strictObject({ models: z.array(z.unknown()).max(QUOTE_BATCH_MAX, `at most ${QUOTE_BATCH_MAX} models per quote`).describe("entries shaped like the GET quote's query") }),
    responses: { 200: { description: "the quotes", schema: QuoteBatchSchema }, ...otherTenant },
  }, async (c, { body }) => {
    const entries = parseOrThrow(z.array(quoteEntry), body.models);
    const models = entries.map((e) => quote(c, e));
    return c.json({ gate: deps.config.pricing.gate, models } satisfies QuoteBatchResponse);
  });

  defineRoute(r, {
    method: "get", path: "/v1/billing/rate-card/gaps", tag, summary: "Models recorded without a price", scope: "read",
    query: z.object({ tenant: optionalId, project: optionalId, since: isoDate.optional() }),
    responses: { 200: { description: "gaps", schema: GapsSchema }, ...otherTenant },
  }, async (c, { query: q }) => {
    const { auth } = c.var;
    const tenant = effectiveTenant(auth.tenantId, q.tenant);
    const rows = await pricingGaps(deps.database.db, { tenantId: auth.tenantId, tenant, project: q.project ?? null, since: q.since ?? null });
    return c.json({
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
    } satisfies GapsResponse);
  });

  defineRoute(r, {
    method: "get", path: "/v1/billing/rate-card/rules", tag, summary: "The database override rules visible to the key", scope: "read",
    responses: { 200: { description: "rules", schema: RuleListSchema } },
  }, async (c) => {
    const rules = await listDbRules(deps.database.db);
    return c.json({ rules: rules.filter(visibleTo(c.var.auth.tenantId)).map(publicRule) } satisfies RuleListResponse);
  });

  // The body is validated by parseRuleBody (a 400 invalid_rate_rule, not a 422): documented, read here.
  defineRoute(r, {
    method: "post", path: "/v1/billing/rate-card/rules", tag, summary: "Upsert the database rule of a scope (operator keys)", scope: "write",
    body: rateRuleInputSchema, bodyMode: "document",
    responses: { 200: { description: "the stored rule", schema: RuleUpsertSchema }, 400: { description: "invalid_rate_rule: details name each offending field" } },
  }, async (c) => {
    const { auth } = c.var;
    operatorOnly(auth.tenantId);
    const { rule, created } = await setRule(ruleDeps(deps), auth, await readJson(c, c.var.bodyLimitBytes));
    return c.json({ ...publicRule(rule), created } satisfies RuleUpsertResponse);
  });

  defineRoute(r, {
    method: "delete", path: "/v1/billing/rate-card/rules/{rule_id}", tag, summary: "Delete a database override rule (operator keys)", scope: "write",
    params: z.object({ rule_id: z.string() }),
    responses: { 200: { description: "the deleted rule", schema: RuleDeletedSchema } },
  }, async (c, { params }) => {
    const { auth } = c.var;
    const id = params.rule_id;
    operatorOnly(auth.tenantId);
    const rule = await removeRule(ruleDeps(deps), auth, id);
    if (!rule) throw new ApiError("not_found", `no rate rule with id ${id}`);
    return c.json({ deleted: true as const, ...publicRule(rule) });
  });

  return r;
}

const ruleDeps = (deps: BillingRouteDeps) => ({ db: deps.database.db, rateCard: deps.rateCard, log: deps.log });
