import type { Modality } from "../config/schema.js";
import { type Catalog, lookupCatalog, publicCatalogEntry } from "./catalog.js";
import { type RateCard, resolveRules } from "./rate.js";
import { CANONICAL_UNIT } from "./rule-form.js";
import { publicRule } from "./rule-store.js";

export type PricingGate = "declared_only" | "permissive";

export interface QuoteRequest {
  modality: Modality;
  model: string;
  tenant: string | null;
  plan: string | null;
}

/**
 * Prices a model before it has run (the quote routes). Pure: the same rule resolution and catalog
 * lookup rating uses.
 *
 * - priced_by `operator`: an operator rule fixes the price (fixed / token legs) or declares the cost;
 *   `catalog`: the price is a markup over the catalog list price; `none`: nothing can price it.
 * - serviceable under `declared_only`: only an operator-declared price or cost (a catalog price alone is
 *   not enough); under `permissive`: anything that prices it.
 */
export function quoteModel(card: RateCard, catalog: Catalog, gate: PricingGate, q: QuoteRequest) {
  const slash = q.model.indexOf("/");
  const provider = q.model.slice(0, slash);
  const res = resolveRules(card, { modality: q.modality, modelId: q.model, provider, tenantId: q.tenant, plan: q.plan });
  const entry = lookupCatalog(catalog, q.model, provider, q.modality);

  const declaredPrice = res.price !== null && res.price.form.kind !== "markup";
  const declaredCost = res.cost !== null && res.cost.form.kind !== "markup";
  // A markup cost rule scales the catalog list price, so it needs a rated entry like the catalog path.
  const catalogCost = entry?.rated === true;
  let pricedBy: "operator" | "catalog" | "none";
  if (declaredPrice || declaredCost) pricedBy = "operator";
  else if (catalogCost) pricedBy = "catalog";
  else pricedBy = "none";
  const priced = pricedBy !== "none";
  const serviceable = gate === "declared_only" ? declaredPrice || declaredCost : priced;

  return {
    modality: q.modality,
    model: q.model,
    tenant: q.tenant,
    plan: q.plan,
    unit: CANONICAL_UNIT[q.modality],
    serviceable,
    priced_by: pricedBy,
    gate,
    catalog: publicCatalogEntry(entry),
    priced,
    effective: res.price ? publicRule(res.price) : null,
    cost_basis: res.cost ? publicRule(res.cost) : null,
    /** The audit token requests of this model would carry (null when it cannot be priced). */
    rule: priced ? (res.price?.token ?? `cost_plus:${card.defaultMarkup}`) : null,
  };
}
