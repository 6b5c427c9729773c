import { moneyNumber } from "../money.js";
import { Hono } from "hono";
import { z } from "zod";
import { requireScope } from "../auth/gate.js";
import { MODALITIES } from "../config/schema.js";
import { ApiError, parseOrThrow } from "../http/errors.js";
import type { AppEnv } from "../http/app-env.js";
import { readJson } from "../http/body.js";
import { lookupCatalog } from "./catalog.js";
import { quoteModel } from "./quote.js";
import { resolveRules } from "./rate.js";
import { deleteRule, listDbRules, parseRuleBody, publicRule, upsertRule } from "./rule-store.js";
import { CANONICAL_UNIT } from "./rule-form.js";
import { pricingGaps, seenModels, usageByTenant, usageLineItems } from "./usage.js";
import type { GapsResponse, QuoteBatchResponse, RateCardResponse, RuleListResponse, RuleUpsertResponse, UsageResponse } from "./responses.js";

/** Most models one POST quote may price (spec limit); more is a 422, never a silent truncation. */
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
  return {
    from: new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1)),
    to: new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1)),
  };
}

const usd = moneyNumber;

/** Endpoints 9-17: usage, rate card, models, quotes, gaps, override rules. */
export function billingRoutes() {
  const r = new Hono<AppEnv>();
  const read = requireScope("read");
  const write = requireScope("write");

  r.get("/v1/billing/usage", read, async (c) => {
    const q = parseOrThrow(z.object({ tenant: optionalId, from: isoDate.optional(), to: isoDate.optional() }), c.req.query());
    const { auth, services } = c.var;
    const tenant = effectiveTenant(auth.tenantId, q.tenant);
    const to = q.to ?? defaultWindow().to;
    const from = q.from ?? defaultWindow(new Date(to.getTime() - 1)).from;
    if (!(from < to)) throw new ApiError("validation_failed", "from must be before to", [{ path: "from", message: "must be before to" }]);
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

  r.get("/v1/billing/rate-card", read, (c) => {
    const { services } = c.var;
    const { card } = services.rateCard.snapshot();
    return c.json({
      default_markup: card.defaultMarkup,
      default_rule: `cost_plus:${card.defaultMarkup}`,
      gate: services.config.pricing.gate,
      precedence: "tenant > plan > model > provider > modality (most specific first; a database rule replaces the seed rule of its scope)",
      refreshed_at: services.rateCard.lastRefreshedAt()?.toISOString() ?? null,
      rules: (card.rules ?? []).filter(visibleTo(c.var.auth.tenantId)).map(publicRule),
    } satisfies RateCardResponse);
  });

  r.get("/v1/billing/rate-card/models", read, async (c) => {
    const q = parseOrThrow(z.object({ tenant: optionalId, plan: optionalId }), c.req.query());
    const { auth, services } = c.var;
    const tenant = effectiveTenant(auth.tenantId, q.tenant);
    const { card, catalog } = services.rateCard.snapshot();
    const rows = await seenModels(services.database.db, { tenantId: auth.tenantId, tenant });
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
    const { card, catalog } = c.var.services.rateCard.snapshot();
    const tenant = effectiveTenant(c.var.auth.tenantId, e.tenant);
    return quoteModel(card, catalog, c.var.services.config.pricing.gate, { modality: e.modality, model: e.model, tenant, plan: e.plan ?? null });
  };

  r.get("/v1/billing/rate-card/quote", read, (c) => c.json(quote(c, parseOrThrow(quoteEntry, c.req.query()))));

  r.post("/v1/billing/rate-card/quote", read, async (c) => {
    const body = parseOrThrow(
      z.strictObject({ models: z.array(z.unknown()).max(QUOTE_BATCH_MAX, `at most ${QUOTE_BATCH_MAX} models per quote`) }),
      await readJson(c, c.var.services.config.serve.body_limit_bytes),
    );
    const entries = parseOrThrow(z.array(quoteEntry), body.models);
    const models = entries.map((e) => quote(c, e));
    return c.json({ gate: c.var.services.config.pricing.gate, models } satisfies QuoteBatchResponse);
  });

  r.get("/v1/billing/rate-card/gaps", read, async (c) => {
    const q = parseOrThrow(z.object({ tenant: optionalId, project: optionalId, since: isoDate.optional() }), c.req.query());
    const { auth, services } = c.var;
    const tenant = effectiveTenant(auth.tenantId, q.tenant);
    const rows = await pricingGaps(services.database.db, { tenantId: auth.tenantId, tenant, project: q.project ?? null, since: q.since ?? null });
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

  r.get("/v1/billing/rate-card/rules", read, async (c) => {
    const rules = await listDbRules(c.var.services.database.db);
    return c.json({ rules: rules.filter(visibleTo(c.var.auth.tenantId)).map(publicRule) } satisfies RuleListResponse);
  });

  r.post("/v1/billing/rate-card/rules", write, async (c) => {
    const { services, auth } = c.var;
    operatorOnly(auth.tenantId);
    const def = parseRuleBody(await readJson(c, services.config.serve.body_limit_bytes));
    const { rule, created } = await upsertRule(services.database.db, auth, def);
    await services.rateCard.refresh();
    services.log.info({ rule_id: rule.ruleId, scope_key: rule.scopeKey, rule: rule.token, actor: auth.actor }, "rate rule upserted");
    return c.json({ ...publicRule(rule), created } satisfies RuleUpsertResponse);
  });

  r.delete("/v1/billing/rate-card/rules/:rule_id", write, async (c) => {
    const { services, auth } = c.var;
    const id = c.req.param("rule_id");
    operatorOnly(auth.tenantId);
    const rule = await deleteRule(services.database.db, auth, id);
    if (!rule) throw new ApiError("not_found", `no rate rule with id ${id}`);
    await services.rateCard.refresh();
    services.log.info({ rule_id: id, scope_key: rule.scopeKey, actor: auth.actor }, "rate rule deleted");
    return c.json({ deleted: true, ...publicRule(rule) });
  });

  return r;
}
