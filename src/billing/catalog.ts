import type { CatalogEntryInput, Modality, PriceUnit } from "../config/schema.js";
import { ConfigError } from "../config/load.js";
import { SHIPPED_CATALOG } from "./catalog-data.js";
import { CANONICAL_UNIT } from "./rule-form.js";

/** One model's list price, in the canonical unit of its modality. */
export interface CatalogEntry {
  key: string;
  modality: Modality;
  unit: PriceUnit;
  /** stt per minute, tts per 1k characters; null for llm or when the entry holds no rate. */
  priceUsd: number | null;
  /** llm per 1M tokens; cached defaults to the input rate. */
  inputPriceUsd: number | null;
  outputPriceUsd: number | null;
  cachedInputPriceUsd: number | null;
  /** llm per 1M audio tokens when priced apart from text (realtime models); null = the text rate. */
  inputAudioPriceUsd: number | null;
  outputAudioPriceUsd: number | null;
  /** False when the catalog knows the model but holds no rate ("unrated", not "unknown"). */
  rated: boolean;
  selfHosted: boolean;
  asOf: string | null;
  source: string | null;
  /** shipped, or overridden/added by pricing.catalog in voxgate.yaml. */
  origin: "shipped" | "config";
}

/**
 * The compiled catalog rating reads. Every field is optional so a bare `{}` is a valid empty catalog.
 * `selfHostedProviders` lets `gpu-box/llama-3.1-8b` find `self-hosted/llama-3.1-8b`.
 */
export interface Catalog {
  entries?: ReadonlyMap<string, CatalogEntry>;
  selfHostedProviders?: ReadonlySet<string>;
  /** Memo of fallback lookups (misses and aliases), so the hot path does one Map.get. */
  memo?: Map<string, CatalogEntry | null>;
}

/** A bad `pricing.catalog` override: a configuration error, reported like one. */
export class CatalogError extends ConfigError {
  override name = "CatalogError";
}

/** Shipped entries merged field by field with `pricing.catalog` overrides. Throws CatalogError on a bad override. */
export function compileCatalog(overrides: Record<string, CatalogEntryInput>, selfHostedProviders: Iterable<string> = []): Catalog {
  const entries = new Map<string, CatalogEntry>();
  for (const [key, e] of Object.entries(SHIPPED_CATALOG)) entries.set(key, toEntry(key, e, "shipped"));
  for (const [key, o] of Object.entries(overrides)) {
    const base = SHIPPED_CATALOG[key];
    const merged: CatalogEntryInput = { ...base, ...o };
    if (!merged.modality) throw new CatalogError(`pricing.catalog.${key}: a new catalog entry needs modality (stt, llm or tts)`);
    if (base && o.modality && o.modality !== base.modality) {
      throw new CatalogError(`pricing.catalog.${key}: modality ${o.modality} contradicts the shipped entry (${base.modality})`);
    }
    const isLlm = merged.modality === "llm";
    const legs =
      o.input_price_usd !== undefined ||
      o.output_price_usd !== undefined ||
      o.cached_input_price_usd !== undefined ||
      o.input_audio_price_usd !== undefined ||
      o.output_audio_price_usd !== undefined;
    if (isLlm && o.price_usd !== undefined) throw new CatalogError(`pricing.catalog.${key}: llm entries use input_price_usd/output_price_usd, not price_usd`);
    if (merged.modality === "tts" && legs) throw new CatalogError(`pricing.catalog.${key}: tts entries use price_usd, not token legs`);
    entries.set(key, toEntry(key, merged, "config"));
  }
  return { entries, selfHostedProviders: new Set(selfHostedProviders), memo: new Map() };
}

function toEntry(key: string, e: CatalogEntryInput, origin: CatalogEntry["origin"]): CatalogEntry {
  const modality = e.modality ?? "llm";
  const input = e.input_price_usd ?? null;
  const output = e.output_price_usd ?? null;
  const price = e.price_usd ?? null;
  // stt entries may state token legs too (token-billed transcription), beside or instead of a per-minute price.
  const legs = modality !== "tts";
  const tokenRated = input !== null && output !== null;
  const rated = modality === "llm" ? tokenRated : price !== null || (modality === "stt" && tokenRated);
  return {
    key,
    modality,
    unit: CANONICAL_UNIT[modality],
    priceUsd: modality === "llm" ? null : price,
    inputPriceUsd: legs ? input : null,
    outputPriceUsd: legs ? output : null,
    cachedInputPriceUsd: legs && input !== null ? (e.cached_input_price_usd ?? input) : null,
    inputAudioPriceUsd: modality === "llm" ? (e.input_audio_price_usd ?? null) : null,
    outputAudioPriceUsd: modality === "llm" ? (e.output_audio_price_usd ?? null) : null,
    rated,
    selfHosted: e.self_hosted ?? false,
    asOf: e.as_of ?? null,
    source: e.source ?? null,
    origin,
  };
}

/**
 * The catalog entry for a record's model, or null ("unknown"). Exact `<provider>/<model>` first;
 * for a self-hosted provider, `self-hosted/<model>`; then a `<provider>/*` entry an operator declared.
 * An entry of another modality does not match.
 */
export function lookupCatalog(catalog: Catalog, modelId: string, provider: string, modality: Modality): CatalogEntry | null {
  const entries = catalog.entries;
  if (!entries) return null;
  const exact = entries.get(modelId);
  if (exact !== undefined) return exact.modality === modality ? exact : null;
  const memoKey = `${modality}\u0000${provider}\u0000${modelId}`;
  const memo = catalog.memo;
  const hit = memo?.get(memoKey);
  if (hit !== undefined) return hit;
  let found: CatalogEntry | null = null;
  const slash = modelId.indexOf("/");
  const name = slash >= 0 ? modelId.slice(slash + 1) : modelId;
  if (catalog.selfHostedProviders?.has(provider)) found = entries.get(`self-hosted/${name}`) ?? null;
  found ??= prefixEntry(entries, modelId);
  found ??= entries.get(`${provider}/*`) ?? null;
  if (found && found.modality !== modality) found = null;
  // Bounded: a flood of distinct unknown model ids must not grow memory without end.
  if (memo) {
    if (memo.size >= 10_000) memo.clear();
    memo.set(memoKey, found);
  }
  return found;
}

/** JSON form of an entry (the `catalog` of a quote, and GET /v1/billing/rate-card/models). */
/** The entry of the longest `<prefix>*` key that modelId starts with (`deepgram/aura-2-*`); null when none. */
function prefixEntry(entries: ReadonlyMap<string, CatalogEntry>, modelId: string): CatalogEntry | null {
  let best: CatalogEntry | null = null;
  for (const [key, e] of entries) {
    if (!key.endsWith("*")) continue;
    const prefix = key.slice(0, -1);
    // `<provider>/*` is the provider-wide fallback, tried after.
    if (prefix.endsWith("/") || !modelId.startsWith(prefix)) continue;
    if (best === null || key.length > best.key.length) best = e;
  }
  return best;
}

export function publicCatalogEntry(e: CatalogEntry | null) {
  if (!e) return { found: false, rated: false };
  return {
    found: true,
    rated: e.rated,
    key: e.key,
    modality: e.modality,
    unit: e.unit,
    ...(e.modality === "llm"
      ? {
          input_price_usd: e.inputPriceUsd,
          output_price_usd: e.outputPriceUsd,
          cached_input_price_usd: e.cachedInputPriceUsd,
          ...(e.inputAudioPriceUsd !== null && { input_audio_price_usd: e.inputAudioPriceUsd }),
          ...(e.outputAudioPriceUsd !== null && { output_audio_price_usd: e.outputAudioPriceUsd }),
        }
      : { price_usd: e.priceUsd }),
    ...(e.modality === "stt" && e.inputPriceUsd !== null && { input_price_usd: e.inputPriceUsd, output_price_usd: e.outputPriceUsd }),
    self_hosted: e.selfHosted,
    as_of: e.asOf,
    source: e.source,
    origin: e.origin,
  };
}
