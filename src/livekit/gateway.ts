import { randomUUID } from "node:crypto";
import type { llm as llmNs, stt as sttNs, tts as ttsNs } from "@livekit/agents";
import { loadAgents, loadCartesia, loadDeepgram, loadElevenLabs, loadOpenAI, trackHost, trackInstance, type Vendor } from "./plugins.js";

export type Modality = "stt" | "llm" | "tts";
type STT = sttNs.STT;
type LLM = llmNs.LLM;
type TTS = ttsNs.TTS;

export interface VoxgateGatewayOptions {
  /** Voxgate's base URL (`http://localhost:8080`); a path prefix (behind a proxy) is kept. */
  url: string;
  /** A Voxgate key with the `infer` scope; it is what each plugin sends as its vendor key. */
  apiKey: string;
  /** Project the calls are billed to. */
  project?: string;
  /** Session the calls belong to; minted when only a project is given (see `sessionId`). */
  sessionId?: string;
}

/** One routable model as `GET /openai/v1/models` lists it. */
export interface GatewayModel {
  id: string;
  modality: Modality;
  /** The provider id (`owned_by`), e.g. `deepgram` or `deepgram-eu`. */
  provider: string;
}

export interface ModelTable {
  models: GatewayModel[];
  stacks: Record<string, Partial<Record<Modality, string>>>;
  /** False when the key could not read `GET /v1/models`: models of non-OpenAI vendors may be missing. */
  complete: boolean;
}

/** Options a factory passes on to the plugin's constructor, over the gateway's base URL and key (the model is the factory's). */
export type PluginOptions = Record<string, unknown> & {
  /** The vendor plugin to use when the provider id does not name one (`acme-asr` of type deepgram). */
  vendor?: Vendor;
};

/** A model for a factory: one id, or several for a cross-vendor FallbackAdapter (first is primary). */
export type ModelSpec = string | readonly string[];

export interface Stack {
  stt: STT;
  llm: LLM;
  tts: TTS;
}

export interface VoxgateGateway {
  readonly url: string;
  readonly project: string | null;
  readonly sessionId: string | null;
  /** The base every vendor prefix hangs from: the URL plus `/p/{project}/s/{session}` when attributed. */
  readonly base: string;
  /** `@livekit/agents-plugin-openai` (LLM, STT, TTS): `{ baseURL, apiKey }`. */
  openai(): { baseURL: string; apiKey: string };
  /** `@livekit/agents-plugin-deepgram` (STT, TTS): `{ baseUrl, apiKey }`; the plugin adds `/v1/listen`, `/v1/speak`. */
  deepgram(): { baseUrl: string; apiKey: string };
  /** `@livekit/agents-plugin-elevenlabs` (TTS): `{ baseURL, apiKey }`. */
  elevenlabs(): { baseURL: string; apiKey: string };
  /**
   * `@livekit/agents-plugin-cartesia` (TTS): `{ baseUrl, apiKey }`. `stream()` uses the base URL's
   * path; `synthesize()` keeps only its host (Voxgate answers at the root `/tts/bytes`, unattributed)
   * and always speaks TLS.
   */
  cartesia(): { baseUrl: string; apiKey: string };
  /** The same gateway for another session (shares the model table). */
  forSession(sessionId: string, project?: string): VoxgateGateway;
  /** The routable models and stacks (`GET /openai/v1/models`), read once and cached; `refresh` re-reads. */
  models(refresh?: boolean): Promise<ModelTable>;
  stt(model: ModelSpec, options?: PluginOptions): Promise<STT>;
  llm(model: ModelSpec, options?: PluginOptions): Promise<LLM>;
  /** `vendor/model[:voice]`, e.g. `cartesia/sonic-2:<voice id>`, `elevenlabs/eleven_flash_v2_5:<voice_id>`, `openai/tts-1:alloy`. */
  tts(model: ModelSpec, options?: PluginOptions): Promise<TTS>;
  /** The stack's stt, llm and tts, each through the gateway. */
  stack(name: string, options?: Partial<Record<Modality, PluginOptions>>): Promise<Stack>;
}

/** A model the gateway does not route, or one no LiveKit plugin here can speak. */
export class GatewayModelError extends Error {
  override name = "GatewayModelError";
}

const VENDORS: readonly Vendor[] = ["openai", "deepgram", "elevenlabs", "cartesia"];
/** Provider ids that speak OpenAI's protocol under /openai/v1. */
const OPENAI_LIKE = ["openai", "groq", "openai_compatible", "openai-compatible"];

const seg = (v: string) => encodeURIComponent(v);

export function voxgateGateway(options: VoxgateGatewayOptions, shared?: { table: Promise<ModelTable> | null }): VoxgateGateway {
  if (!options.url) throw new GatewayModelError("voxgateGateway needs the Voxgate url");
  if (!options.apiKey) throw new GatewayModelError("voxgateGateway needs a Voxgate apiKey (scope infer)");
  const url = options.url.replace(/\/+$/, "");
  const project = options.project ?? null;
  const sessionId = options.sessionId ?? (project ? randomUUID() : null);
  const base = sessionId ? `${url}/p/${seg(project ?? "default")}/s/${seg(sessionId)}` : url;
  const apiKey = options.apiKey;
  trackHost(new URL(url).host);
  const cache: { table: Promise<ModelTable> | null } = shared ?? { table: null };

  const gw: VoxgateGateway = {
    url,
    project,
    sessionId,
    base,
    openai: () => ({ baseURL: `${base}/openai/v1`, apiKey }),
    deepgram: () => ({ baseUrl: `${base}/deepgram`, apiKey }),
    elevenlabs: () => ({ baseURL: `${base}/elevenlabs/v1`, apiKey }),
    cartesia: () => ({ baseUrl: `${base}/cartesia`, apiKey }),
    forSession: (s, p) => voxgateGateway({ url, apiKey, project: p ?? project ?? undefined, sessionId: s }, cache),
    models(refresh = false) {
      if (!cache.table || refresh) {
        const p = fetchModelTable(url, apiKey);
        cache.table = p;
        p.catch(() => {
          if (cache.table === p) cache.table = null; // a failed read is retried by the next call
        });
      }
      return cache.table;
    },
    stt: (model, opts) => build(gw, "stt", model, opts),
    llm: (model, opts) => build(gw, "llm", model, opts),
    tts: (model, opts) => build(gw, "tts", model, opts),
    async stack(name, opts = {}) {
      const table = await gw.models();
      const stack = table.stacks[name];
      if (!stack) throw new GatewayModelError(`Voxgate has no stack "${name}" (stacks: ${Object.keys(table.stacks).join(", ") || "none"})`);
      const need = (m: Modality): string => {
        const id = stack[m];
        if (!id) throw new GatewayModelError(`stack "${name}" names no ${m} model`);
        return id;
      };
      const [stt, llm, tts] = await Promise.all([gw.stt(need("stt"), opts.stt), gw.llm(need("llm"), opts.llm), gw.tts(need("tts"), opts.tts)]);
      return { stt, llm, tts };
    },
  };
  return gw;
}

async function getJson(url: string, apiKey: string): Promise<{ ok: true; body: unknown } | { ok: false; why: string }> {
  try {
    const res = await fetch(url, { headers: { authorization: `Bearer ${apiKey}` }, signal: AbortSignal.timeout(10_000) });
    if (!res.ok) return { ok: false, why: `answered ${res.status}` };
    return { ok: true, body: await res.json() };
  } catch (err) {
    return { ok: false, why: (err as Error).message };
  }
}

const isModality = (m: unknown): m is Modality => m === "stt" || m === "llm" || m === "tts";

/**
 * `GET /openai/v1/models` (the stacks, and the models behind OpenAI-type providers), joined with the
 * daemon's `GET /v1/models` (every configured model) when the key may read it. Without the latter
 * the table is partial: a model missing from it is still built, from its provider prefix.
 */
async function fetchModelTable(url: string, apiKey: string): Promise<ModelTable> {
  const [gatewayList, daemonList] = await Promise.all([getJson(`${url}/openai/v1/models`, apiKey), getJson(`${url}/v1/models`, apiKey)]);
  if (!gatewayList.ok) throw new GatewayModelError(`could not read Voxgate's model table at ${url}/openai/v1/models: ${gatewayList.why}`);
  const listed = gatewayList.body as { data?: { id?: unknown; modality?: unknown; owned_by?: unknown }[]; stacks?: ModelTable["stacks"] };
  const byId = new Map<string, GatewayModel>();
  for (const m of listed.data ?? []) {
    if (typeof m.id !== "string" || !isModality(m.modality)) continue;
    byId.set(m.id, { id: m.id, modality: m.modality, provider: typeof m.owned_by === "string" ? m.owned_by : providerPrefix(m.id) });
  }
  if (daemonList.ok) {
    const models = (daemonList.body as { models?: Record<string, { modality?: unknown; provider?: unknown }> }).models ?? {};
    for (const [id, m] of Object.entries(models)) {
      if (!isModality(m.modality) || byId.has(id)) continue;
      byId.set(id, { id, modality: m.modality, provider: typeof m.provider === "string" ? m.provider : providerPrefix(id) });
    }
  }
  return { models: [...byId.values()], stacks: listed.stacks ?? {}, complete: daemonList.ok };
}

const providerPrefix = (id: string) => id.slice(0, Math.max(0, id.indexOf("/")));

/** The plugin for a provider id: its own name (`deepgram`), a prefixed one (`deepgram-eu`), OpenAI-like types. */
export function vendorOf(provider: string, explicit?: Vendor): Vendor | null {
  if (explicit) return explicit;
  const p = provider.toLowerCase();
  if (OPENAI_LIKE.includes(p)) return "openai";
  return VENDORS.find((v) => p === v || p.startsWith(`${v}-`) || p.startsWith(`${v}_`)) ?? null;
}

/** `provider/model[:voice]` → the model id and the voice (tts only; a colon in an stt/llm id is kept). */
export function splitVoice(spec: string, modality: Modality): { id: string; voice: string | null } {
  if (modality !== "tts") return { id: spec, voice: null };
  const slash = spec.indexOf("/");
  const colon = spec.indexOf(":", slash + 1);
  return colon > slash && slash > 0 ? { id: spec.slice(0, colon), voice: spec.slice(colon + 1) || null } : { id: spec, voice: null };
}

async function build(gw: VoxgateGateway, modality: "stt", spec: ModelSpec, opts?: PluginOptions): Promise<STT>;
async function build(gw: VoxgateGateway, modality: "llm", spec: ModelSpec, opts?: PluginOptions): Promise<LLM>;
async function build(gw: VoxgateGateway, modality: "tts", spec: ModelSpec, opts?: PluginOptions): Promise<TTS>;
async function build(gw: VoxgateGateway, modality: Modality, spec: ModelSpec, opts: PluginOptions = {}): Promise<STT | LLM | TTS> {
  const specs = typeof spec === "string" ? [spec] : [...spec];
  if (specs.length === 0) throw new GatewayModelError(`no ${modality} model given`);
  const table = await gw.models();
  const instances = await Promise.all(specs.map((s) => buildOne(gw, table, modality, s, opts)));
  const [first] = instances;
  if (instances.length === 1 && first) return first;
  const agents = await loadAgents(specs.join(", "));
  // LiveKit's own FallbackAdapter over gateway-pointed instances: a vendor down moves to the next.
  if (modality === "stt") return trackInstance(new agents.stt.FallbackAdapter({ sttInstances: instances as STT[] }));
  if (modality === "llm") return trackInstance(new agents.llm.FallbackAdapter({ llms: instances as LLM[] }));
  return trackInstance(new agents.tts.FallbackAdapter({ ttsInstances: instances as TTS[] }));
}

async function buildOne(gw: VoxgateGateway, table: ModelTable, modality: Modality, spec: string, opts: PluginOptions): Promise<STT | LLM | TTS> {
  const { vendor: explicit, ...rest } = opts;
  const { id, voice } = splitVoice(spec, modality);
  // A partial table (no read scope) cannot rule a model out: build it from its id; Voxgate will judge.
  const entry = table.models.find((m) => m.id === id) ?? (table.complete ? undefined : { id, modality, provider: providerPrefix(id) });
  if (!entry || entry.modality !== modality) {
    const routable = table.models.filter((m) => m.modality === modality).map((m) => m.id);
    const why = entry ? `is a ${entry.modality} model` : "is not routable through Voxgate";
    throw new GatewayModelError(`${id} ${why}; routable ${modality} models: ${routable.join(", ") || "none"}`);
  }
  const vendor = vendorOf(entry.provider, explicit);
  if (!vendor) throw new GatewayModelError(`${id}: provider ${entry.provider} names no LiveKit plugin; pass { vendor: "openai" | "deepgram" | "elevenlabs" | "cartesia" }`);
  const voiceOpt = (key: string): Record<string, unknown> => (voice ? { [key]: voice } : {});

  if (vendor === "openai") {
    const openai = await loadOpenAI(spec);
    const o = { ...gw.openai(), ...rest, model: id };
    if (modality === "llm") return trackInstance(new openai.LLM(o as ConstructorParameters<typeof openai.LLM>[0]));
    if (modality === "stt") return trackInstance(new openai.STT(o as ConstructorParameters<typeof openai.STT>[0]));
    return trackInstance(new openai.TTS({ ...voiceOpt("voice"), ...o } as ConstructorParameters<typeof openai.TTS>[0]));
  }
  if (vendor === "deepgram") {
    const deepgram = await loadDeepgram(spec);
    const o = { ...gw.deepgram(), ...rest, model: id };
    if (modality === "stt") return trackInstance(new deepgram.STT(o as ConstructorParameters<typeof deepgram.STT>[0]));
    if (modality === "tts") return trackInstance(new deepgram.TTS(o as ConstructorParameters<typeof deepgram.TTS>[0]));
  }
  if (vendor === "elevenlabs" && modality === "tts") {
    const elevenlabs = await loadElevenLabs(spec);
    return trackInstance(new elevenlabs.TTS({ ...gw.elevenlabs(), ...voiceOpt("voiceId"), ...rest, model: id } as ConstructorParameters<typeof elevenlabs.TTS>[0]));
  }
  if (vendor === "cartesia" && modality === "tts") {
    const cartesia = await loadCartesia(spec);
    return trackInstance(new cartesia.TTS({ ...gw.cartesia(), ...voiceOpt("voice"), ...rest, model: id } as ConstructorParameters<typeof cartesia.TTS>[0]));
  }
  throw new GatewayModelError(`${id}: Voxgate's ${vendor} routes serve no ${modality} to a LiveKit plugin`);
}
