import { cartesiaMeter } from "../audio/stream-meters.js";
import { cartesiaTranscript, characterCount } from "../audio/tts-units.js";
import {
  authorizationToken,
  forwardableHeaders,
  type GatewayErrorCode,
  headerValue,
  type InboundRequest,
  ProtocolInputError,
  type ProxyRoute,
  type UpstreamTarget,
  type VendorProtocol,
} from "../protocol.js";
import { forwardQuery, type WsProtocol, type WsRoute } from "../ws/ws-route.js";
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

/** POST /tts/bytes: `{"model_id", "transcript", "voice", "output_format"}` → audio, billed by the transcript's characters. */
export const cartesiaBytesRoute: ProxyRoute = {
  kind: "proxy",
  method: "POST",
  path: "/tts/bytes",
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
      path: "/tts/bytes",
      headers: { ...forwardableHeaders(inbound.headers), "content-type": "application/json", "cartesia-version": cartesiaVersion(inbound), ...keyAuth(target) },
      body: withModelField(inbound.body, state.json, "model_id", target.modelName),
    };
  },
  meter: charactersMeter,
};

function cartesiaError(_status: number, code: GatewayErrorCode, message: string, details?: unknown) {
  return { contentType: "application/json", body: JSON.stringify({ error: message, code, ...(details !== undefined && { details }) }) };
}

/**
 * /cartesia: Cartesia's wire protocol. The key arrives as `X-API-Key`, a Bearer token, or `api_key`
 * on a WebSocket URL (the JS SDK). Cartesia's paths are fixed (/tts/bytes, /tts/websocket): the
 * LiveKit plugin's synthesize() drops a base URL's path, so the same routes are also served at the
 * root (src/gateway/ws/routes.ts).
 */
export const cartesiaProtocol: VendorProtocol = {
  id: "cartesia",
  prefix: "/cartesia",
  providerTypes: ["cartesia"],
  credential: (headers, query) => headerValue(headers, "x-api-key") ?? authorizationToken(headers) ?? query.get("api_key"),
  upstreamAuth: keyAuth,
  errorBody: cartesiaError,
  routes: [cartesiaBytesRoute],
};

/**
 * WebSocket /tts/websocket: the model is named per message (`model_id`), not at connect, so the
 * route's model comes from the project's stack or a `model_id` query parameter Voxgate accepts; each
 * message's model_id is rewritten to the routed model's name.
 */
const websocketRoute: WsRoute = {
  path: "/tts/websocket",
  modality: "tts",
  model: (inbound) => inbound.query.get("model_id") || inbound.query.get("model") || null,
  upstream: (inbound, target) => ({
    path: `/tts/websocket${forwardQuery(inbound.query, { cartesia_version: cartesiaVersion(inbound), model_id: null, model: null })}`,
    headers: { ...keyAuth(target), "cartesia-version": cartesiaVersion(inbound) },
  }),
  meter: () => cartesiaMeter(),
  rewriteClientText: (target) => (frame) => rewriteModelId(frame, target.modelName),
};

/** A generation request's model_id set to the routed model (other messages untouched). */
export function rewriteModelId(frame: string, modelName: string): string {
  if (!frame.includes('"model_id"')) return frame;
  try {
    const msg = JSON.parse(frame) as unknown;
    if (typeof msg !== "object" || msg === null || Array.isArray(msg)) return frame;
    const m = msg as Record<string, unknown>;
    if (m.model_id === modelName || typeof m.model_id !== "string") return frame;
    return JSON.stringify({ ...m, model_id: modelName });
  } catch {
    return frame;
  }
}

export const cartesiaWs: WsProtocol = { protocol: cartesiaProtocol, routes: [websocketRoute] };
