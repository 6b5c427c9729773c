import { queryOptions } from "@tanstack/react-query";
import { api, get } from "../client";
import type { GapsResponse, QuoteBatchResponse, RateCardResponse, RuleBody, RuleUpsertResponse, UsageResponse } from "../types";

export interface QuoteInput {
  modality: string;
  model: string;
  tenant: string;
  plan: string;
}

/** Billing (GET /v1/billing/usage, the rate card, its gaps and quotes) and the rule writes. */
export const billingQueries = {
  usage: (from: string, to: string, tenant: string) =>
    queryOptions({ queryKey: ["usage", from, to, tenant], queryFn: () => get<UsageResponse>("/v1/billing/usage", { from, to, tenant }) }),
  rateCard: () => queryOptions({ queryKey: ["rate-card"], queryFn: () => get<RateCardResponse>("/v1/billing/rate-card") }),
  gaps: () => queryOptions({ queryKey: ["gaps"], queryFn: () => get<GapsResponse>("/v1/billing/rate-card/gaps") }),
  quotes: () => ({ queryKey: ["quote"] as const }),
  quote: (q: QuoteInput) =>
    queryOptions({
      queryKey: ["quote", q.modality, q.model, q.tenant, q.plan],
      queryFn: () =>
        api<QuoteBatchResponse>("POST", "/v1/billing/rate-card/quote", {
          models: [{ modality: q.modality, model: q.model, tenant: q.tenant || null, plan: q.plan || null }],
        }),
    }),
};

export const billingWrites = {
  upsertRule: (body: RuleBody) => api<RuleUpsertResponse>("POST", "/v1/billing/rate-card/rules", body),
  deleteRule: (id: string) => api<unknown>("DELETE", `/v1/billing/rate-card/rules/${encodeURIComponent(id)}`),
};
