import type { PricingGate, quoteModel } from "./quote.js";
import type { publicRule } from "./rule-store.js";

/**
 * Response bodies of the billing routes (src/billing/routes.ts builds each with `satisfies`, so these
 * are what the server sends; the web app imports them as its API types).
 */
export type PublicRule = ReturnType<typeof publicRule>;
export type Quote = ReturnType<typeof quoteModel>;

export interface UsageMoney {
  rated_revenue_usd: number;
  recorded_cost_usd: number;
  margin_usd: number;
  /** Percent of revenue, 4 decimals; null without revenue. */
  margin_pct: number | null;
}

export interface UsageTenantRow extends UsageMoney {
  tenant: string | null;
  requests: number;
  unpriced_requests: number;
  uncosted_requests: number;
}

export interface UsageLineItem extends UsageMoney {
  modality: string;
  model_id: string;
  unit: string | null;
  requests: number;
  input_units: number;
  output_units: number;
  unpriced_requests: number;
  uncosted_requests: number;
  rate_rules: string[];
}

export interface UsageResponse {
  from: string;
  to: string;
  currency: "USD";
  tenant: string | null;
  tenants: UsageTenantRow[];
  totals: Omit<UsageTenantRow, "tenant">;
  line_items?: UsageLineItem[];
}

export interface RateCardResponse {
  default_markup: number;
  default_rule: string;
  gate: PricingGate;
  precedence: string;
  refreshed_at: string | null;
  rules: PublicRule[];
}

export interface RuleListResponse {
  rules: PublicRule[];
}

export type RuleUpsertResponse = PublicRule & { created: boolean };

export interface QuoteBatchResponse {
  gate: PricingGate;
  models: Quote[];
}

export interface PricingGap {
  model_id: string;
  modality: string;
  provider: string;
  requests: number;
  input_units: number;
  output_units: number;
  last_seen: string;
  unknown_requests: number;
  unrated_requests: number;
  self_priced_requests: number;
}

export interface GapsResponse {
  tenant: string | null;
  project: string | null;
  since: string | null;
  caveat_before: string;
  gaps: PricingGap[];
}
