import { STATUS_CODES } from "node:http";
import { shortStringField, TtsContextLedger } from "../audio/tts-contexts.js";
import type { TtsWire } from "../failover/tts-legs.js";
import { cartesiaToElevenLabsBridge } from "../failover/tts-translate.js";
import type { VoiceMap } from "../failover/voices.js";
import { jsonObject } from "../audio/stt-units.js";
import { cartesiaTranscript, characterCount } from "../audio/tts-units.js";
import { authorizationToken, forwardableHeaders, type GatewayErrorCode, headerValue, type InboundRequest, ProtocolInputError, type ProxyRoute, type UpstreamTarget, type VendorProtocol } from "../protocol.js";
import { forwardQuery, type StreamModels, type WsProtocol, type WsRoute } from "../ws/ws-route.js";
import { charactersMeter, optionalString, type SpeechState, withModelField } from "./audio-common.js";
import { jsonObjectBody } from "./json-body.js";

/** The API version sent when the caller named none (Cartesia requires one). */
export const DEFAULT_CARTESIA_VERSION = "2024-06-10";

/** The caller's Cartesia-Version (header, or `cartesia_version` on a WebSocket URL), else the default. */
function cartesiaVersion(inbound: InboundRequest): string {
  const v = headerValue(inbound.headers, "cartesia-version") ?? inbound.query.get("cartesia_version") ?? DEFAULT_CARTESIA_VERSION;
  return /^[0-9A-Za-z._-]{1,40}$/.test(v) ? v : DEFAULT_CARTESIA_VERSION;
}

const keyAuth = (t: UpstreamTarget): Record<string, string> => (t.apiKey ? { "x-api-key": t.apiKey } : {});

/**
 * POST /tts/bytes (audio) and /tts/sse (server-sent events of base64 chunks): `{"model_id",
 * "transcript", "voice", "output_format"}`, billed by the transcript's characters.
 */
function ttsRoute(path: "/tts/bytes" | "/tts/sse"): ProxyRoute {
  return {
    kind: "proxy",
    method: "POST",
    path,
    modality: "tts",
    parse(inbound) {
      const json = jsonObjectBody(inbound.body);
      const text = cartesiaTranscript(json);
      if (text === null) throw new ProtocolInputError('"transcript" must be a string');
      const state: SpeechState = { json, characters: characterCount(text) };
      return { model: optionalString(json, "model_id"), stream: true, state, estimate: { characters: state.characters } };
    },
    upstreamRequest(inbound, call, target) {
      const state = call.state as SpeechState;
      return {
        method: "POST",
        path,
        headers: { ...forwardableHeaders(inbound.headers), "content-type": "application/json", "cartesia-version": cartesiaVersion(inbound), ...keyAuth(target) },
        body: withModelField(inbound.body, state.json, "model_id", target.modelName),
      };
    },
    meter: charactersMeter,
  };
}

export const cartesiaBytesRoute = ttsRoute("/tts/bytes");
export const cartesiaSseRoute = ttsRoute("/tts/sse");

/**
 * Cartesia's error body, `{error_code, title, message}`: its SDK reads `message` into the error's
 * text ("404 <message>") and keeps the body as `err.error`; error_code is Voxgate's code.
 */
function cartesiaError(status: number, code: GatewayErrorCode, message: string, details?: unknown) {
  const title = STATUS_CODES[status] ?? "Error";
  return { contentType: "application/json", body: JSON.stringify({ error_code: code, title, message, ...(details !== undefined && { details }) }) };
}

/**
 * /cartesia: Cartesia's wire protocol. The key arrives as `X-API-Key`, a Bearer token, or `api_key`
 * on a WebSocket URL (the JS SDK). Cartesia's paths are fixed (/tts/bytes, /tts/websocket): the
 * LiveKit plugin's synthesize() drops a base URL's path, so the same routes are also served at the
 * root (src/gateway/listener.ts).
 */
export const cartesiaProtocol: VendorProtocol = {
  id: "cartesia",
  prefix: "/cartesia",
  providerTypes: ["cartesia"],
  credential: (headers, query) => headerValue(headers, "x-api-key") ?? authorizationToken(headers) ?? query.get("api_key"),
  upstreamAuth: keyAuth,
  errorBody: cartesiaError,
  routes: [cartesiaBytesRoute, cartesiaSseRoute],
};

/**
 * WebSocket /tts/websocket: the model is named per generation request (`model_id`), not at connect
 * (a `model_id` query parameter, which Voxgate accepts, or the project's stack may name one). Without
 * one on the URL the upgrade completes first and the first generation request picks the model. Each
 * request's model_id is resolved: the stream's model or another routable Cartesia model of the same
 * provider is sent on under its vendor name (and that generation is recorded under it); any other is
 * answered with Cartesia's own `error` message for the request's context_id and not sent.
 */
const websocketRoute: WsRoute = {
  path: "/tts/websocket",
  modality: "tts",
  model: (inbound) => inbound.query.get("model_id") || inbound.query.get("model") || null,
  upstream: (inbound, target) => ({
    path: `/tts/websocket${forwardQuery(inbound.query, { cartesia_version: cartesiaVersion(inbound), model_id: null, model: null })}`,
    headers: { ...keyAuth(target), "cartesia-version": cartesiaVersion(inbound) },
  }),
  meter: (_inbound, target) => new TtsContextLedger("cartesia", target),
  clientText: (target, models, meter) => generationGate(target, models, meter as TtsContextLedger),
  ttsFailover: cartesiaTtsWire,
  ttsCrossFailover: (voices, latest) => [cartesiaToElevenLabsBridge(voices, latest, cartesiaWsError)],
  inBand: {
    named: (frame) => {
      if (!frame.includes('"model_id"')) return null;
      const m = jsonObject(frame)?.model_id;
      return typeof m === "string" ? m : null;
    },
    work: (frame, isBinary) => !isBinary && frame.includes('"transcript"'),
    error: cartesiaWsError,
  },
};

/** Cartesia's WebSocket error message, in the context of the request it answers. */
export function cartesiaWsError(frame: string | null, code: GatewayErrorCode, message: string): string {
  const ctx = frame === null ? undefined : jsonObject(frame)?.context_id;
  const status = code === "model_not_found" ? 404 : code === "budget_exceeded" ? 402 : code === "rate_limited" || code === "too_many_streams" ? 429 : code === "payload_too_large" ? 413 : code.startsWith("upstream") ? 502 : 400;
  return JSON.stringify({
    type: "error",
    ...(typeof ctx === "string" && { context_id: ctx }),
    done: true,
    status_code: status,
    error_code: code,
    title: code,
    message,
    error: message,
  });
}

/**
 * The per-frame model gate of a Cartesia stream: a generation request's model_id resolved once per
 * name (the stream's model, or another of the same provider) and rewritten to the vendor's name; a
 * request without model_id gets the stream's model; an unservable one is refused in-band. Its voice
 * id goes as the `voices:` map names it for the stream's provider.
 */
function generationGate(stream: UpstreamTarget, models: StreamModels, ledger: TtsContextLedger): (frame: string) => string | null {
  const resolved = new Map<string, ReturnType<StreamModels["resolve"]>>();
  return (frame) => {
    const hasModel = frame.includes('"model_id"');
    if (!hasModel && !frame.includes('"transcript"')) return frame;
    const msg = jsonObject(frame);
    if (!msg || msg.cancel === true) return frame;
    const voiced = withVoice(msg, (v) => models.voice(v));
    const named = msg.model_id;
    if (typeof named !== "string") return typeof msg.transcript === "string" ? JSON.stringify({ ...(voiced ?? msg), model_id: stream.modelName }) : frame;
    let r = resolved.get(named);
    if (!r) {
      r = named === stream.modelName || named === stream.modelId ? { ok: true, target: stream } : models.resolve(named);
      if (resolved.size < 64) resolved.set(named, r);
    }
    if (!r.ok) {
      ledger.unbillLast();
      models.refuse(frame, named, r.code, r.message);
      return null;
    }
    ledger.assignLast(r.target);
    return named === r.target.modelName && voiced === null ? frame : JSON.stringify({ ...(voiced ?? msg), model_id: r.target.modelName });
  };
}

/** A generation request with its voice id (`voice: {mode: "id", id}`) mapped, or null when the map leaves it as it is. */
function withVoice(msg: Record<string, unknown>, map: (voice: string) => string): Record<string, unknown> | null {
  const voice = msg.voice;
  if (typeof voice !== "object" || voice === null) return null;
  const id = (voice as Record<string, unknown>).id;
  if (typeof id !== "string") return null;
  const mapped = map(id);
  return mapped === id ? null : { ...msg, voice: { ...voice, id: mapped } };
}

const KEY = { type: Buffer.from('"type"'), context: Buffer.from('"context_id"') };

/** A vendor error the next candidate may not share: a server-side failure or a rate limit (not a refused request). */
function vendorSideError(msg: Record<string, unknown> | null): boolean {
  const status = msg?.status_code;
  return typeof status !== "number" || status >= 500 || status === 429;
}

/**
 * Cartesia's tts/websocket across a failover seam (src/gateway/failover/tts-legs.ts): generations are
 * `context_id`s, due at their last piece of text (`continue` not true) or a flush; server frames
 * `chunk` (audio), `done`, `error` (a 5xx or 429 fails the leg; another status ends that generation
 * as the vendor said); `model_id` is each leg's own vendor name, the voice id as `voices:` names it
 * for each leg's provider.
 */
export function cartesiaTtsWire(voices: VoiceMap): TtsWire {
  return {
    request(frame, isBinary) {
      if (isBinary || !frame.includes(KEY.context)) return null;
      const msg = jsonObject(frame.toString("utf8"));
      if (!msg || typeof msg.context_id !== "string") return null;
      if (msg.cancel === true) return { context: msg.context_id, cancel: true, due: false };
      // A continued context (`continue: true`) may be buffered by the vendor until more text or its end: due at its last piece (or a flush).
      return typeof msg.transcript === "string" ? { context: msg.context_id, cancel: false, due: msg.continue !== true || msg.flush === true } : null;
    },
    answer(frame, isBinary) {
      if (isBinary) return null;
      const type = shortStringField(frame, KEY.type);
      const context = shortStringField(frame, KEY.context);
      if (type === "chunk" || type === "timestamps") return { context, kind: "audio" };
      if (type === "done") return { context, kind: "done" };
      if (type !== "error") return null;
      return { context, kind: vendorSideError(jsonObject(frame.toString("utf8"))) ? "failed" : "done" };
    },
    retarget(frame, from, to) {
      const model = from.target.modelName !== to.target.modelName && frame.includes('"model_id"');
      const voice = !voices.empty && from.target.providerId !== to.target.providerId && frame.includes('"voice"');
      if (!model && !voice) return frame;
      const msg = jsonObject(frame.toString("utf8"));
      if (!msg) return frame;
      let out = voice ? (withVoice(msg, (v) => voices.moved(v, from.target.providerId, to.target.providerId)) ?? msg) : msg;
      if (model && msg.model_id === from.target.modelName) out = { ...out, model_id: to.target.modelName };
      return out === msg ? frame : Buffer.from(JSON.stringify(out));
    },
    failure: (context, message) => cartesiaWsError(JSON.stringify({ context_id: context }), "upstream_unavailable", message),
  };
}

export const cartesiaWs: WsProtocol = { protocol: cartesiaProtocol, routes: [websocketRoute] };
