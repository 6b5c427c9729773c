import { z } from "zod";

/** Answer schemas of the billing routes (the TypeScript shapes in responses.ts are what the handlers build). */

const usd = z.number().describe("USD");

export const PublicRuleSchema = z
  .looseObject({
    rule_id: z.string().optional(),
    source: z.string().describe("seed (voxgate.yaml) or db"),
    rule: z.string().describe("the rule's token, e.g. cost_plus:1.3"),
    scope_key: z.string(),
    tenant: z.string().nullable(),
    plan: z.string().nullable(),
    modality: z.string().nullable(),
    provider: z.string().nullable(),
    model: z.string().nullable(),
    sets: z.string(),
    markup: z.number().nullable(),
    fixed: z.number().nullable(),
    unit: z.string().nullable(),
    input_price_usd: z.number().nullable(),
    output_price_usd: z.number().nullable(),
    cached_input_price_usd: z.number().nullable(),
    created_at: z.string().optional(),
    updated_at: z.string().optional(),
  })
  .meta({ id: "RateRule" });

const usageMoney = {
  rated_revenue_usd: usd,
  recorded_cost_usd: usd,
  margin_usd: usd,
  margin_pct: z.number().nullable().describe("percent of revenue, 4 decimals; null without revenue"),
};
const counts = { requests: z.number().int(), unpriced_requests: z.number().int(), uncosted_requests: z.number().int() };

export const UsageSchema = z.object({
  from: z.string(),
  to: z.string(),
  currency: z.literal("USD"),
  tenant: z.string().nullable(),
  tenants: z.array(z.object({ tenant: z.string().nullable(), ...counts, ...usageMoney })),
  totals: z.object({ ...counts, ...usageMoney }),
  line_items: z
    .array(
      z.object({
        modality: z.string(),
        model_id: z.string(),
        unit: z.string().nullable(),
        input_units: z.number(),
        output_units: z.number(),
        rate_rules: z.array(z.string()),
        ...counts,
        ...usageMoney,
      }),
    )
    .optional()
    .describe("only for one tenant"),
});

export const RateCardSchema = z.object({
  default_markup: z.number(),
  default_rule: z.string(),
  gate: z.string(),
  precedence: z.string(),
  refreshed_at: z.string().nullable(),
  rules: z.array(PublicRuleSchema),
});

export const RateCardModelsSchema = z.object({
  tenant: z.string().nullable(),
  default_markup: z.number(),
  models: z.array(
    z.looseObject({
      model_id: z.string(),
      modality: z.string(),
      provider: z.string(),
      unit: z.string().nullable(),
      voice_price_usd: z.number().nullable(),
      voice_output_price_usd: z.number().nullable().optional(),
      catalog: z.enum(["rated", "unrated", "unknown"]),
      effective: PublicRuleSchema.nullable(),
      cost_basis: PublicRuleSchema.nullable(),
      requests: z.number().int(),
      last_seen: z.string(),
    }),
  ),
});

export const QuoteSchema = z
  .looseObject({
    modality: z.string(),
    model: z.string(),
    tenant: z.string().nullable(),
    plan: z.string().nullable(),
    unit: z.string().nullable(),
    priced_by: z.enum(["operator", "catalog", "none"]),
    effective: PublicRuleSchema.nullable(),
    cost_basis: PublicRuleSchema.nullable(),
    rule: z.string().nullable(),
  })
  .meta({ id: "Quote" });

export const QuoteBatchSchema = z.object({ gate: z.string(), models: z.array(QuoteSchema) });

export const GapsSchema = z.object({
  tenant: z.string().nullable(),
  project: z.string().nullable(),
  since: z.string().nullable(),
  caveat_before: z.string(),
  gaps: z.array(
    z.object({
      model_id: z.string(),
      modality: z.string(),
      provider: z.string(),
      requests: z.number().int(),
      input_units: z.number(),
      output_units: z.number(),
      last_seen: z.string(),
      unknown_requests: z.number().int(),
      unrated_requests: z.number().int(),
      self_priced_requests: z.number().int(),
    }),
  ),
});

export const RuleListSchema = z.object({ rules: z.array(PublicRuleSchema) });
export const RuleUpsertSchema = PublicRuleSchema.extend({ created: z.boolean() });
export const RuleDeletedSchema = PublicRuleSchema.extend({ deleted: z.literal(true) });
