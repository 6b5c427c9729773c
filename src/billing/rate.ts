import { MAX_MONEY_USD, roundMoney } from "../money.js";
import type { Modality } from "../config/schema.js";
import { type Catalog, type CatalogEntry, lookupCatalog } from "./catalog.js";
import { formFits, type PricingForm, type RuleDef, ruleToken, scopeKey, specificity, UNIT_SIZE } from "./rule-form.js";

export type { Catalog, CatalogEntry } from "./catalog.js";

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
  /** Of inputTokens / outputTokens, the audio ones (realtime models); absent or null = none known. */
  inputAudioTokens?: number | null;
  outputAudioTokens?: number | null;
  audioSeconds: number | null;
  /** Seconds the vendor bills when they differ from the audio's (a streaming session): per-minute prices apply to these. */
  billedSeconds?: number | null;
  characters: number | null;
  /** What the provider charged, when the agent knew; null lets a cost rule or the catalog price it. */
  costUsd: number | null;
}

export interface Rating {
  /** Provider cost (given, or priced from a cost rule / the catalog); null when unknown. */
  costUsd: number | null;
  /** What the operator charges the tenant; null when it cannot be priced. */
  ratedPriceUsd: number | null;
  /** Audit token: cost_plus:<n>, fixed:<n>/<unit>, tokens:<in>/<out>/<cached>/<unit>; null when unpriced. */
  rateRule: string | null;
  /**
   * priced; self_priced (a tenant-bound record rated on the cost the tenant reported, the collector
   * having no cost of its own for it); unknown (catalog lacks the model); unrated (catalog matched it
   * but holds no rate).
   */
  pricing: "priced" | "self_priced" | "unknown" | "unrated";
}

/** A rule of the merged card: a seed rule (no id) or a database override. */
export interface CardRule extends RuleDef {
  ruleId: string | null;
  source: "seed" | "db";
  scopeKey: string;
  /** The audit token stamped on requests it rates. */
  token: string;
  specificity: number;
  createdAt?: Date | null;
  updatedAt?: Date | null;
}

/** The rate card in effect. `rules` and `index` are optional so `{ defaultMarkup }` alone is a card. */
export interface RateCard {
  defaultMarkup: number;
  /** Merged seed + database rules, most specific first. */
  rules?: readonly CardRule[];
  index?: CardIndex;
}

export interface Resolution {
  price: CardRule | null;
  cost: CardRule | null;
}

/** Rules pre-split by (sets, modality) in precedence order, plus a memo of resolutions per scope. */
export interface CardIndex {
  price: Record<Modality, CardRule[]>;
  cost: Record<Modality, CardRule[]>;
  defaultToken: string;
  /** modality → model → provider → tenant → plan → resolution. */
  memo: Record<Modality, Map<string, Map<string, Map<string, Map<string, Resolution>>>>>;
}

/** A seed rule as a card rule. */
export function seedRule(def: RuleDef): CardRule {
  return { ...def, ruleId: null, source: "seed", scopeKey: scopeKey(def), token: ruleToken(def.form), specificity: specificity(def) };
}

/** Merges seed and database rules (a database rule overrides the seed rule of its scope) and precompiles. */
export function compileRateCard(defaultMarkup: number, seed: readonly CardRule[], db: readonly CardRule[] = []): RateCard {
  const byScope = new Map<string, CardRule>();
  for (const r of seed) byScope.set(r.scopeKey, r);
  for (const r of db) byScope.set(r.scopeKey, r);
  const rules = [...byScope.values()].sort((a, b) => b.specificity - a.specificity || a.scopeKey.localeCompare(b.scopeKey));
  return { defaultMarkup, rules, index: buildIndex(defaultMarkup, rules) };
}

function buildIndex(defaultMarkup: number, rules: readonly CardRule[]): CardIndex {
  const split = (sets: "price" | "cost", m: Modality) => rules.filter((r) => r.sets === sets && (r.modality === null || r.modality === m) && formFits(r.form, m));
  return {
    price: { stt: split("price", "stt"), llm: split("price", "llm"), tts: split("price", "tts") },
    cost: { stt: split("cost", "stt"), llm: split("cost", "llm"), tts: split("cost", "tts") },
    defaultToken: ruleToken({ kind: "markup", markup: defaultMarkup }),
    memo: { stt: new Map(), llm: new Map(), tts: new Map() },
  };
}

// Cards built as bare literals ({ defaultMarkup }) get their index built once, on first use.
const lateIndexes = new WeakMap<RateCard, CardIndex>();
function indexOf(card: RateCard): CardIndex {
  if (card.index) return card.index;
  let idx = lateIndexes.get(card);
  if (!idx) {
    idx = buildIndex(card.defaultMarkup, card.rules ?? []);
    lateIndexes.set(card, idx);
  }
  return idx;
}

export interface Scope {
  modality: Modality;
  modelId: string;
  provider: string;
  tenantId: string | null;
  plan?: string | null;
}

function matches(r: CardRule, s: Scope): boolean {
  return (
    (r.model === null || r.model === s.modelId) &&
    (r.provider === null || r.provider === s.provider) &&
    (r.tenant === null || r.tenant === s.tenantId) &&
    (r.plan === null || r.plan === (s.plan ?? null))
  );
}

/** The most specific price rule and cost rule matching a scope (each null when none matches). */
export function resolveRules(card: RateCard, s: Scope): Resolution {
  const idx = indexOf(card);
  // Nested maps keyed by the record's own strings: no key string is built per rating.
  const byModel = idx.memo[s.modality];
  let byProvider = byModel.get(s.modelId);
  if (byProvider === undefined) {
    if (byModel.size >= 10_000) byModel.clear(); // bounded: a flood of distinct ids must not grow memory
    byProvider = new Map();
    byModel.set(s.modelId, byProvider);
  }
  let byTenant = byProvider.get(s.provider);
  if (byTenant === undefined) {
    byTenant = new Map();
    byProvider.set(s.provider, byTenant);
  }
  const tenant = s.tenantId ?? "";
  let byPlan = byTenant.get(tenant);
  if (byPlan === undefined) {
    if (byTenant.size >= 10_000) byTenant.clear();
    byPlan = new Map();
    byTenant.set(tenant, byPlan);
  }
  const plan = s.plan ?? "";
  const hit = byPlan.get(plan);
  if (hit !== undefined) return hit;
  const res: Resolution = { price: first(idx.price[s.modality], s), cost: first(idx.cost[s.modality], s) };
  if (byPlan.size >= 1_000) byPlan.clear();
  byPlan.set(plan, res);
  return res;
}

function first(rules: readonly CardRule[], s: Scope): CardRule | null {
  for (const r of rules) if (matches(r, s)) return r;
  return null;
}

const nonNeg = (n: number | null): number => (n !== null && Number.isFinite(n) && n > 0 ? n : 0);

/** USD for a fixed or token-leg form over the record's units; one division at the end keeps unit conversion exact. */
function formAmount(form: Exclude<PricingForm, { kind: "markup" }>, r: RatingInput): number {
  if (form.kind === "tokens") {
    const input = nonNeg(r.inputTokens);
    const cached = nonNeg(r.cachedInputTokens);
    // Cached prompt tokens are a subset of the prompt: they are billed at the cached rate, the rest at the input rate.
    const uncached = input > cached ? input - cached : 0;
    const out = nonNeg(r.outputTokens);
    return (uncached * form.input + cached * form.cachedInput + out * form.output) / UNIT_SIZE[form.unit];
  }
  let base: number;
  if (form.unit === "request") base = r.status === "error" ? 0 : 1;
  else if (form.unit === "minute" || form.unit === "second") base = nonNeg(r.billedSeconds ?? r.audioSeconds);
  else base = nonNeg(r.characters);
  return (form.fixed * base) / UNIT_SIZE[form.unit];
}

/**
 * The list cost of a record from its catalog entry (rated entries only). A transcription record with
 * tokens is rated by the entry's token legs when it states them (gpt-4o-transcribe is billed per
 * token), else by its per-minute price over the audio's seconds.
 */
export function catalogCost(e: CatalogEntry, r: RatingInput): number | null {
  if (!e.rated) return null;
  if (e.modality === "llm" && (e.inputAudioPriceUsd !== null || e.outputAudioPriceUsd !== null)) return audioSplitCost(e, r);
  const byTokens = e.modality === "stt" && e.inputPriceUsd !== null && e.outputPriceUsd !== null && (r.inputTokens !== null || r.outputTokens !== null);
  if (e.modality === "llm" || byTokens) {
    return formAmount(
      { kind: "tokens", input: e.inputPriceUsd ?? 0, output: e.outputPriceUsd ?? 0, cachedInput: e.cachedInputPriceUsd ?? e.inputPriceUsd ?? 0, unit: "1m_token" },
      r,
    );
  }
  if (e.priceUsd === null) return null;
  const price = e.priceUsd;
  return formAmount({ kind: "fixed", fixed: price, unit: e.modality === "stt" ? "minute" : "1k_char" }, r);
}

/**
 * The list cost of a model that prices audio tokens apart from text (OpenAI realtime). Cached input
 * tokens are billed at the cached rate; of the rest of the input, the audio tokens not covered by the
 * cached ones are billed at the audio rate (a record does not say which cached tokens were audio, and
 * in a voice session the cached prefix is mostly audio), the remainder at the text rate; output audio
 * tokens at the output audio rate, the rest at the text output rate.
 */
function audioSplitCost(e: CatalogEntry, r: RatingInput): number {
  const input = nonNeg(r.inputTokens);
  const cached = Math.min(nonNeg(r.cachedInputTokens), input);
  const audioIn = Math.min(Math.max(0, nonNeg(r.inputAudioTokens ?? null) - cached), input - cached);
  const textIn = input - cached - audioIn;
  const output = nonNeg(r.outputTokens);
  const audioOut = Math.min(nonNeg(r.outputAudioTokens ?? null), output);
  const textRateIn = e.inputPriceUsd ?? 0;
  const textRateOut = e.outputPriceUsd ?? 0;
  return (
    (textIn * textRateIn +
      audioIn * (e.inputAudioPriceUsd ?? textRateIn) +
      cached * (e.cachedInputPriceUsd ?? textRateIn) +
      (output - audioOut) * textRateOut +
      audioOut * (e.outputAudioPriceUsd ?? textRateOut)) /
    1_000_000
  );
}

/** The collector's own cost of a record: the most specific `sets: cost` rule, else the catalog list price; null when it has neither. */
function collectorCost(res: Resolution, entry: CatalogEntry | null, input: RatingInput): number | null {
  const costRule = res.cost;
  if (!costRule) return entry ? catalogCost(entry, input) : null;
  if (costRule.form.kind !== "markup") return formAmount(costRule.form, input);
  const list = entry ? catalogCost(entry, input) : null;
  return list === null ? null : list * costRule.form.markup;
}

/**
 * Rates one request: (record, rate card, catalog) → cost, rated price, audit token, pricing status. Pure.
 *
 * Cost basis. Untenanted (operator) records: the reported cost_usd, else the collector's own cost (the
 * most specific `sets: cost` rule, markup multiplying the catalog cost, else the catalog list price).
 * Tenant-bound records (tenantId set: the tenant wrote them with its own key): the collector's own cost
 * whenever it has one, so a tenant cannot set its own price by reporting a cost; only when the
 * collector has none is the reported cost the basis, and the record is "self_priced". The recorded
 * cost (costUsd) is always the reported one when given (kept for reconcile), else the collector's.
 * Price: the most specific `sets: price` rule (markup multiplies the basis; fixed and token legs price
 * the units directly), else basis × default markup. When no price can be formed the record is
 * "unknown" (catalog lacks the model) or "unrated" (catalog matched it with no rate): never a silent zero.
 */
export function rateRequest(input: RatingInput, card: RateCard, catalog: Catalog): Rating {
  const res = resolveRules(card, input);
  const entry = lookupCatalog(catalog, input.modelId, input.provider, input.modality);
  const given = input.costUsd;
  const reported = given !== null && Number.isFinite(given) && given >= 0 ? given : null;
  const tenantBound = input.tenantId !== null;
  const own = reported === null || tenantBound ? collectorCost(res, entry, input) : null;
  const basis = tenantBound ? (own ?? reported) : (reported ?? own);
  let cost = reported ?? own;

  let price: number | null;
  let token: string;
  const rule = res.price;
  const onBasis = rule === null || rule.form.kind === "markup";
  if (rule === null) {
    price = basis === null ? null : basis * card.defaultMarkup;
    token = indexOf(card).defaultToken;
  } else {
    price = rule.form.kind === "markup" ? (basis === null ? null : basis * rule.form.markup) : formAmount(rule.form, input);
    token = rule.token;
  }
  // Absurd units (ingest should bound them) must not produce a value the money column cannot hold.
  if (cost !== null && !(cost < MAX_MONEY_USD)) cost = null;
  if (price !== null && !(price < MAX_MONEY_USD)) price = null;
  const costUsd = cost === null ? null : roundMoney(cost);
  if (price === null) return { costUsd, ratedPriceUsd: null, rateRule: null, pricing: entry ? "unrated" : "unknown" };
  const selfPriced = tenantBound && onBasis && own === null;
  return { costUsd, ratedPriceUsd: roundMoney(price), rateRule: token, pricing: selfPriced ? "self_priced" : "priced" };
}
