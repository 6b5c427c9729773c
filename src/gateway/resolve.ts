import type { Modality, ProviderType } from "../config/schema.js";
import type { RoutableModel, UpstreamTarget } from "./protocol.js";
import type { RoutingTable } from "./routing-table.js";

/** The prefix of a stack reference in a request's model field: `stack:<name>`. */
export const STACK_PREFIX = "stack:";

export type Resolution =
  | { ok: true; target: UpstreamTarget; via: "model" | "bare" | "stack" | "default_stack" }
  | { ok: false; reason: string; routable: string[] };

interface RouteSpeaks {
  modality: Modality;
  providerTypes: readonly ProviderType[];
}

/** The target of one model id on this route, or null when the route cannot reach it. */
export function targetOf(table: RoutingTable, modelId: string, route: RouteSpeaks): UpstreamTarget | null {
  const m = table.models.get(modelId);
  if (!m || m.modality !== route.modality) return null;
  const p = table.providers.get(m.providerId);
  if (!p || !route.providerTypes.includes(p.providerType)) return null;
  return {
    modelId: m.modelId,
    modality: m.modality,
    providerId: p.providerId,
    providerType: p.providerType,
    modelName: m.modelName,
    baseUrl: p.baseUrl,
    apiKey: p.apiKey,
  };
}

/** Models of this modality the route can reach (configured provider of a type it speaks). */
export function routableModels(table: RoutingTable, route: RouteSpeaks): RoutableModel[] {
  const out: RoutableModel[] = [];
  for (const m of table.models.values()) {
    const t = targetOf(table, m.modelId, route);
    if (t) out.push({ modelId: t.modelId, modality: t.modality, providerId: t.providerId, providerType: t.providerType, modelName: t.modelName });
  }
  return out;
}

/**
 * Which model a request goes to. `requested` is what the caller named: a Voxgate id
 * `<provider>/<model>`, a bare vendor model name (the route's own vendor first, then the other types
 * it speaks, in declaration order), or `stack:<name>`; null falls back to `vendorDefault` (the
 * vendor's own default model) when configured, else the project's default_stack. Pure: the same table and request give the same answer.
 */
export function resolveModel(table: RoutingTable, route: RouteSpeaks, requested: string | null, defaultStack: string | null, vendorDefault?: string): Resolution {
  const miss = (reason: string): Resolution => ({ ok: false, reason, routable: routableModels(table, route).map((m) => m.modelId) });
  if ((requested === null || requested === "") && vendorDefault) {
    // The vendor's own default when it is configured here; else the project's stack, as for any unnamed model.
    const own = resolveModel(table, route, vendorDefault, null);
    if (own.ok) return own;
  }
  if (requested === null || requested === "") {
    if (!defaultStack) return miss("no model named and the project has no default_stack");
    return viaStack(defaultStack, "default_stack");
  }
  if (requested.startsWith(STACK_PREFIX)) return viaStack(requested.slice(STACK_PREFIX.length), "stack");

  const exact = targetOf(table, requested, route);
  if (exact) return { ok: true, target: exact, via: "model" };
  // A bare vendor name (it may itself hold a slash, e.g. meta-llama/Llama-3.1-8B on vLLM).
  for (const type of route.providerTypes) {
    for (const m of table.models.values()) {
      if (m.modelName !== requested || m.modality !== route.modality) continue;
      const p = table.providers.get(m.providerId);
      if (p?.providerType !== type) continue;
      const t = targetOf(table, m.modelId, route);
      if (t) return { ok: true, target: t, via: "bare" };
    }
  }
  return miss(`model ${requested} is not routable here`);

  function viaStack(name: string, via: "stack" | "default_stack"): Resolution {
    const stack = table.stacks[name];
    if (!stack) return miss(`no stack ${name}`);
    const id = stack[route.modality];
    if (!id) return miss(`stack ${name} names no ${route.modality} model`);
    const t = targetOf(table, id, route);
    return t ? { ok: true, target: t, via } : miss(`stack ${name}'s ${route.modality} model ${id} is not routable here`);
  }
}

/**
 * The models to try after `primary`, in order: those after it in fallbacks.<modality> (the whole
 * list when it is not in it), that this route can reach, each once.
 */
export function fallbackChain(table: RoutingTable, route: RouteSpeaks, primary: UpstreamTarget): UpstreamTarget[] {
  const list = table.fallbacks[route.modality];
  if (list.length === 0) return [];
  const at = list.indexOf(primary.modelId);
  const rest = at >= 0 ? list.slice(at + 1) : list;
  const out: UpstreamTarget[] = [];
  const seen = new Set([primary.modelId]);
  for (const id of rest) {
    if (seen.has(id)) continue;
    seen.add(id);
    const t = targetOf(table, id, route);
    if (t) out.push(t);
  }
  return out;
}
