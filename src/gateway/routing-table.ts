import type { Modality, ProviderType } from "../config/schema.js";
import { MODALITIES } from "../config/schema.js";
import type { EffectiveProject, SecretStore } from "../manage/registry.js";
import { listEffectiveModels, listEffectiveProjects, listEffectiveProviders, providerApiKey } from "../manage/registry.js";
import { VENDORS } from "../manage/vendors.js";

/** A provider the gateway can call: its type, API base and own key (in memory only, never logged). */
export interface RoutableProvider {
  providerId: string;
  providerType: ProviderType;
  /** No trailing slash. */
  baseUrl: string;
  apiKey: string;
}

export interface RoutingModel {
  modelId: string;
  modality: Modality;
  providerId: string;
  modelName: string;
}

/**
 * Everything routing needs, as one immutable snapshot held in memory: the hot path never reads the
 * store. Rebuilt in the background (gateway.refresh_interval_ms) from voxgate.yaml plus the managed
 * (source db) providers, models and projects, so a change through the API is routable within one
 * refresh interval.
 */
export interface RoutingTable {
  providers: ReadonlyMap<string, RoutableProvider>;
  /** Every model by id, whatever its provider's state. */
  models: ReadonlyMap<string, RoutingModel>;
  stacks: Readonly<Record<string, Partial<Record<Modality, string>>>>;
  projects: ReadonlyMap<string, EffectiveProject>;
  fallbacks: Readonly<Record<Modality, readonly string[]>>;
}

export const EMPTY_TABLE: RoutingTable = {
  providers: new Map(),
  models: new Map(),
  stacks: {},
  projects: new Map(),
  fallbacks: { stt: [], llm: [], tts: [] },
};

const trimSlash = (u: string) => u.replace(/\/+$/, "");

/** Reads the effective registry (yaml + db) into a routing table; provider keys are decrypted here once. */
export async function loadRoutingTable(deps: SecretStore): Promise<RoutingTable> {
  const [providerList, modelList, projectList] = await Promise.all([
    listEffectiveProviders(deps),
    listEffectiveModels(deps),
    listEffectiveProjects(deps),
  ]);
  const providers = new Map<string, RoutableProvider>();
  for (const p of providerList) {
    const base = p.baseUrl ?? VENDORS[p.providerType].defaultBaseUrl;
    if (!base) continue; // openai_compatible without base_url: nowhere to send
    let apiKey = "";
    try {
      apiKey = await providerApiKey(deps, p);
    } catch {
      continue; // a key that no longer decrypts (secret rotated away): not routable
    }
    if (!apiKey && p.location === "cloud") continue;
    providers.set(p.providerId, { providerId: p.providerId, providerType: p.providerType, baseUrl: trimSlash(base), apiKey });
  }
  const models = new Map<string, RoutingModel>();
  for (const m of modelList) models.set(m.modelId, { modelId: m.modelId, modality: m.modality, providerId: m.providerId, modelName: m.modelName });
  const stacks: Record<string, Partial<Record<Modality, string>>> = {};
  for (const [name, s] of Object.entries(deps.config.stacks)) {
    const entry: Partial<Record<Modality, string>> = {};
    for (const m of MODALITIES) if (s[m]) entry[m] = s[m];
    stacks[name] = entry;
  }
  return {
    providers,
    models,
    stacks,
    projects: new Map(projectList.map((p) => [p.id, p])),
    fallbacks: {
      stt: [...deps.config.fallbacks.stt],
      llm: [...deps.config.fallbacks.llm],
      tts: [...deps.config.fallbacks.tts],
    },
  };
}
