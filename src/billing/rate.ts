import type { Modality } from "../config/schema.js";

/**
 * INTERFACE STUB (platform issue): the billing issue replaces the body of rateRequest and the
 * RateCard/Catalog types; the signature is what ingest and the gateway recorder call.
 */

/** The units and identity of one request, as rating needs them. */
export interface RatingInput {
  modality: Modality;
  modelId: string;
  provider: string;
  tenantId: string | null;
  plan?: string | null;
  status: "success" | "error" | "fallback";
  inputTokens: number | null;
  outputTokens: number | null;
  cachedInputTokens: number | null;
  audioSeconds: number | null;
  characters: number | null;
  /** What the provider charged, when the agent knew; null lets the catalog price it. */
  costUsd: number | null;
}

export interface Rating {
  /** Provider cost (given, or priced from a cost rule / the catalog); null when unknown. */
  costUsd: number | null;
  /** What the operator charges the tenant; null when it cannot be priced. */
  ratedPriceUsd: number | null;
  /** Audit token: cost_plus:<n>, fixed:<n>/<unit>, … ; null when unpriced. */
  rateRule: string | null;
  pricing: "priced" | "unknown" | "unrated";
}

export interface RateCard {
  defaultMarkup: number;
}

export type Catalog = Record<string, never>;

export function rateRequest(input: RatingInput, card: RateCard, _catalog: Catalog): Rating {
  if (input.costUsd === null) return { costUsd: null, ratedPriceUsd: null, rateRule: null, pricing: "unknown" };
  return {
    costUsd: input.costUsd,
    ratedPriceUsd: Math.round(input.costUsd * card.defaultMarkup * 1e10) / 1e10,
    rateRule: `cost_plus:${card.defaultMarkup}`,
    pricing: "priced",
  };
}
