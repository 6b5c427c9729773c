import { z } from "zod";
import { roundMoney } from "../money.js";

/*
 * The rate-rule input shape, apart from schema.ts so that the pricing-form checks (billing/rule-form.ts)
 * can name its types while schema.ts runs them on the seed rules: no import cycle, type-only included.
 * schema.ts re-exports everything here.
 */

export const MODALITIES = ["stt", "llm", "tts"] as const;
export type Modality = (typeof MODALITIES)[number];

export const PRICE_UNITS = ["minute", "second", "char", "1k_char", "request", "1m_token", "1k_token"] as const;
export type PriceUnit = (typeof PRICE_UNITS)[number];

/** Largest unit price and markup a rule or catalog entry may hold (money columns are numeric(20,10)). */
export const MAX_UNIT_PRICE_USD = 1_000_000;
export const MAX_MARKUP = 1000;

/** A USD amount: finite, not negative, bounded, and exact at the 10 decimal places money is stored with. */
export const usd = (max: number) =>
  z
    .number()
    .finite()
    .nonnegative()
    .max(max)
    .refine((n) => roundMoney(n) === n, "at most 10 decimal places (money is stored as numeric(20,10))");

// Scope values end up in the scope key `tenant|plan|modality|provider|model`, in logs and in SQL
// parameters: a plain identifier alphabet keeps them unambiguous (no `|`, quotes, spaces or `;`).
const scopeId = z
  .string()
  .min(1)
  .max(200)
  .regex(/^[A-Za-z0-9][A-Za-z0-9._:@-]*$/, "letters, digits and . _ : @ - only");
export const modelId = z
  .string()
  .min(3)
  .max(400)
  .regex(/^[A-Za-z0-9][A-Za-z0-9._:@-]*\/[A-Za-z0-9._:@/-]+$/, "a full <provider>/<model> id (letters, digits, . _ : @ - /)");

/** A rate-card rule as written in YAML or POSTed to /v1/billing/rate-card/rules; the pricing-form matrix is checked in billing. */
export const rateRuleInputSchema = z.strictObject({
  tenant: scopeId.optional(),
  plan: scopeId.optional(),
  modality: z.enum(MODALITIES).optional(),
  provider: scopeId.optional(),
  model: modelId.optional(),
  sets: z.enum(["price", "cost"]).default("price"),
  markup: usd(MAX_MARKUP).optional(),
  fixed: usd(MAX_UNIT_PRICE_USD).optional(),
  unit: z.string().max(40).optional(),
  input_price_usd: usd(MAX_UNIT_PRICE_USD).optional(),
  output_price_usd: usd(MAX_UNIT_PRICE_USD).optional(),
  cached_input_price_usd: usd(MAX_UNIT_PRICE_USD).optional(),
});
export type RateRuleInput = z.infer<typeof rateRuleInputSchema>;
