import type { Modality, PriceUnit, RateRuleInput } from "../config/rate-rule.js";

// src/config/schema.ts imports this module to validate the seed rate card, so its types come from
// config/rate-rule.ts, which imports nothing of either.

/** Units of a single-sided `fixed` price, and the modalities each can measure. */
export const FIXED_UNITS = ["minute", "second", "char", "1k_char", "request"] as const;
/** Units of token-leg prices (llm only). */
export const TOKEN_UNITS = ["1m_token", "1k_token"] as const;
export type FixedUnit = (typeof FIXED_UNITS)[number];
export type TokenUnit = (typeof TOKEN_UNITS)[number];

/** Which record modality a unit can measure (`request` measures any). */
export const UNIT_MODALITIES: Record<PriceUnit, readonly Modality[]> = {
  minute: ["stt"],
  second: ["stt"],
  char: ["tts"],
  "1k_char": ["tts"],
  request: ["stt", "llm", "tts"],
  "1m_token": ["llm"],
  "1k_token": ["llm"],
};

/** The canonical price unit of each modality (the `unit` of GET /v1/billing/rate-card/models). */
export const CANONICAL_UNIT: Record<Modality, PriceUnit> = { stt: "minute", tts: "1k_char", llm: "1m_token" };

/** How many base quantities (seconds, characters, tokens, requests) one unit holds: exact integers. */
export const UNIT_SIZE: Record<PriceUnit, number> = {
  second: 1,
  minute: 60,
  char: 1,
  "1k_char": 1000,
  request: 1,
  "1k_token": 1000,
  "1m_token": 1_000_000,
};

export type PricingForm =
  | { kind: "markup"; markup: number }
  | { kind: "fixed"; fixed: number; unit: FixedUnit }
  | { kind: "tokens"; input: number; output: number; cachedInput: number; unit: TokenUnit };

/** A validated rule: scope + what it sets + exactly one pricing form. */
export interface RuleDef {
  tenant: string | null;
  plan: string | null;
  modality: Modality | null;
  provider: string | null;
  model: string | null;
  sets: "price" | "cost";
  form: PricingForm;
}

const isFixedUnit = (u: string): u is FixedUnit => (FIXED_UNITS as readonly string[]).includes(u);
const isTokenUnit = (u: string): u is TokenUnit => (TOKEN_UNITS as readonly string[]).includes(u);

/**
 * The endpoint-16 matrix: every reason a shape-valid rule body is still not a rule, as
 * {path, message}. Empty means valid. Shared by the seed rate card (config load) and HTTP/CLI.
 */
export function pricingFormProblems(r: RateRuleInput): { path: string; message: string }[] {
  const out: { path: string; message: string }[] = [];
  if (r.model !== undefined && r.provider !== undefined && !r.model.startsWith(`${r.provider}/`)) {
    out.push({ path: "model", message: `model ${r.model} does not belong to provider ${r.provider}` });
    return out;
  }
  const hasMarkup = r.markup !== undefined;
  const hasFixed = r.fixed !== undefined;
  const hasLeg = r.input_price_usd !== undefined || r.output_price_usd !== undefined || r.cached_input_price_usd !== undefined;
  const forms = [hasMarkup, hasFixed, hasLeg].filter(Boolean).length;
  if (forms === 0) {
    out.push({ path: "", message: "give exactly one pricing form: markup, fixed + unit, or input_price_usd + output_price_usd + unit" });
    return out;
  }
  if (hasMarkup && hasFixed) out.push({ path: "markup", message: "markup and fixed are exclusive: give one pricing form" });
  if (hasMarkup && hasLeg) out.push({ path: "markup", message: "markup and token leg prices are exclusive: give one pricing form" });
  if (hasFixed && hasLeg) out.push({ path: "fixed", message: "fixed and token leg prices are exclusive: give one pricing form" });
  if (out.length > 0) return out;

  if (hasMarkup) {
    if (r.unit !== undefined) out.push({ path: "unit", message: "unit applies to fixed or token prices, not to markup" });
    return out;
  }
  if (r.unit === undefined) {
    out.push({ path: "unit", message: hasFixed ? `fixed needs a unit: ${FIXED_UNITS.join(", ")}` : `token prices need a unit: ${TOKEN_UNITS.join(", ")}` });
    return out;
  }
  const unit = r.unit;
  if (!isFixedUnit(unit) && !isTokenUnit(unit)) {
    out.push({ path: "unit", message: `unknown unit ${JSON.stringify(unit)}; use one of ${[...FIXED_UNITS, ...TOKEN_UNITS].join(", ")}` });
    return out;
  }
  if (hasFixed && isTokenUnit(unit)) {
    out.push({ path: "fixed", message: `a bare fixed price cannot use the token unit ${unit}: give input_price_usd and output_price_usd` });
  }
  if (hasLeg && isTokenUnit(unit) && (r.input_price_usd === undefined || r.output_price_usd === undefined)) {
    out.push({
      path: r.input_price_usd === undefined ? "input_price_usd" : "output_price_usd",
      message: "a token unit needs both legs: input_price_usd and output_price_usd",
    });
  }
  if (hasLeg && isFixedUnit(unit)) {
    out.push({ path: "unit", message: `leg prices need a token unit (${TOKEN_UNITS.join(", ")}), not ${unit}` });
  }
  if (r.modality !== undefined && !UNIT_MODALITIES[unit].includes(r.modality)) {
    out.push({ path: "unit", message: `the unit ${unit} cannot measure ${r.modality} (it measures ${UNIT_MODALITIES[unit].join(", ")})` });
  }
  return out;
}

/** A shape-valid input with no pricingFormProblems, as a RuleDef. */
export function toRuleDef(r: RateRuleInput): RuleDef {
  let form: PricingForm;
  if (r.markup !== undefined) form = { kind: "markup", markup: r.markup };
  else if (r.fixed !== undefined) form = { kind: "fixed", fixed: r.fixed, unit: r.unit as FixedUnit };
  else {
    const input = r.input_price_usd ?? 0;
    form = {
      kind: "tokens",
      input,
      output: r.output_price_usd ?? 0,
      cachedInput: r.cached_input_price_usd ?? input,
      unit: r.unit as TokenUnit,
    };
  }
  return {
    tenant: r.tenant ?? null,
    plan: r.plan ?? null,
    modality: r.modality ?? null,
    provider: r.provider ?? null,
    model: r.model ?? null,
    sets: r.sets ?? "price",
    form,
  };
}

/** The one-rule-per-scope key: `tenant|plan|modality|provider|model`, empty where unset. */
export function scopeKey(r: Pick<RuleDef, "tenant" | "plan" | "modality" | "provider" | "model">): string {
  return [r.tenant, r.plan, r.modality, r.provider, r.model].map((v) => v ?? "").join("|");
}

/**
 * The audit token stamped on rated requests: `cost_plus:<markup>`, `fixed:<price>/<unit>`, or for
 * token legs `tokens:<input>/<output>/<cached_input>/<unit>` (prices per unit, cached defaulted).
 */
export function ruleToken(form: PricingForm): string {
  switch (form.kind) {
    case "markup":
      return `cost_plus:${form.markup}`;
    case "fixed":
      return `fixed:${form.fixed}/${form.unit}`;
    case "tokens":
      return `tokens:${form.input}/${form.output}/${form.cachedInput}/${form.unit}`;
  }
}

/**
 * Precedence of a rule's scope: a bit per field, tenant > plan > model > provider > modality.
 * Rules that match one record and share a field set also share every value (the record's), so
 * they have the same scope key and there is only one of them: the order is total, with no ties.
 */
export function specificity(r: Pick<RuleDef, "tenant" | "plan" | "modality" | "provider" | "model">): number {
  return (r.tenant ? 16 : 0) + (r.plan ? 8 : 0) + (r.model ? 4 : 0) + (r.provider ? 2 : 0) + (r.modality ? 1 : 0);
}

/** Whether a rule's pricing form can measure records of this modality (unit compatibility). */
export function formFits(form: PricingForm, modality: Modality): boolean {
  if (form.kind === "markup") return true;
  return UNIT_MODALITIES[form.unit].includes(modality);
}
