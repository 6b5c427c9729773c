import { z } from "zod";
import { rateRuleInputSchema } from "../config/schema.js";
import type { AppEnv } from "../http/app-env.js";
import { readJson } from "../http/body.js";
import { parseOrThrow } from "../http/errors.js";
import { contractRouter, defineRoute } from "../http/openapi.js";
import { type BillingDeps, billingUsage, deleteRule, effectiveTenant, gaps, gapsQuery, optionalId, quote, quoteEntry, rateCard, upsertRule, usageQuery, visibleTo } from "./answers.js";
import { lookupCatalog } from "./catalog.js";
import { resolveRules } from "./rate.js";
import { listDbRules, publicRule } from "./rule-store.js";
import { CANONICAL_UNIT } from "./rule-form.js";
import { seenModels } from "./usage.js";
import type { QuoteBatchResponse, RuleListResponse } from "./responses.js";
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

export type { BillingDeps as BillingRouteDeps } from "./answers.js";
export { CAVEAT_BEFORE, CAVEAT_RELEASE, defaultWindow } from "./answers.js";

/** Most models one POST quote may price (docs/api/billing.md); more is a 422, never a silent truncation. */
export const QUOTE_BATCH_MAX = 200;

/** Billing routes (docs/api/billing.md): usage, rate card, models, quotes, gaps, override rules. */
export function billingRoutes(deps: BillingDeps) {
  const r = contractRouter();
  const tag = "billing";
  const otherTenant = { 404: { description: "a tenant key named another tenant" } };

  defineRoute(r, {
    method: "get", path: "/v1/billing/usage", tag, summary: "Rated revenue, recorded cost and margin by tenant (line items for one tenant)", scope: "read",
    query: usageQuery,
    responses: { 200: { description: "usage", schema: UsageSchema }, ...otherTenant },
  }, async (c, { query }) => c.json(await billingUsage(deps, c.var.auth, query)));

  defineRoute(r, {
    method: "get", path: "/v1/billing/rate-card", tag, summary: "The rate card: default markup, gate and the rules visible to the key", scope: "read",
    responses: { 200: { description: "the card", schema: RateCardSchema } },
  }, (c) => c.json(rateCard(deps, c.var.auth)));

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

  const quoteOf = (c: { var: AppEnv["Variables"] }, e: z.infer<typeof quoteEntry>) => quote(deps, c.var.auth, e);

  defineRoute(r, {
    method: "get", path: "/v1/billing/rate-card/quote", tag, summary: "Quote one model", scope: "read",
    query: quoteEntry, responses: { 200: { description: "the quote", schema: QuoteSchema }, ...otherTenant },
  }, (c, { query }) => c.json(quoteOf(c, query)));

  defineRoute(r, {
    method: "post", path: "/v1/billing/rate-card/quote", tag, summary: `Quote up to ${QUOTE_BATCH_MAX} models`, scope: "read",
    body: z.strictObject({ models: z.array(z.unknown()).max(QUOTE_BATCH_MAX, `at most ${QUOTE_BATCH_MAX} models per quote`).describe("entries shaped like the GET quote's query") }),
    responses: { 200: { description: "the quotes", schema: QuoteBatchSchema }, ...otherTenant },
  }, async (c, { body }) => {
    const entries = parseOrThrow(z.array(quoteEntry), body.models);
    const models = entries.map((e) => quoteOf(c, e));
    return c.json({ gate: deps.config.pricing.gate, models } satisfies QuoteBatchResponse);
  });

  defineRoute(r, {
    method: "get", path: "/v1/billing/rate-card/gaps", tag, summary: "Models recorded without a price", scope: "read",
    query: gapsQuery,
    responses: { 200: { description: "gaps", schema: GapsSchema }, ...otherTenant },
  }, async (c, { query }) => c.json(await gaps(deps, c.var.auth, query)));

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
  }, async (c) => c.json(await upsertRule(deps, c.var.auth, await readJson(c, c.var.bodyLimitBytes))));

  defineRoute(r, {
    method: "delete", path: "/v1/billing/rate-card/rules/{rule_id}", tag, summary: "Delete a database override rule (operator keys)", scope: "write",
    params: z.object({ rule_id: z.string() }),
    responses: { 200: { description: "the deleted rule", schema: RuleDeletedSchema } },
  }, async (c, { params }) => c.json(await deleteRule(deps, c.var.auth, params.rule_id)));

  return r;
}

