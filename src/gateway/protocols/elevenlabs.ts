import { jsonBoundsProblem } from "../../http/body.js";
import { jsonObject } from "../audio/stt-units.js";
import { shortStringField, stringValueAt, TtsContextLedger, trueAt } from "../audio/tts-contexts.js";
import type { TtsWire } from "../failover/tts-legs.js";
import { characterCount, elevenlabsText } from "../audio/tts-units.js";
import { authorizationToken, forwardableHeaders, type GatewayErrorCode, headerValue, type InboundRequest, ProtocolInputError, type ProxyRoute, type UpstreamTarget, type VendorProtocol } from "../protocol.js";
import { forwardQuery, type WsProtocol, type WsRoute } from "../ws/ws-route.js";
import { charactersMeter, modelQuery, optionalString, type SpeechState, withModelField } from "./audio-common.js";
import { jsonObjectBody } from "./json-body.js";

const xiAuth = (t: UpstreamTarget): Record<string, string> => (t.apiKey ? { "xi-api-key": t.apiKey } : {});

/** A voice id goes into the upstream path: a plain identifier only (no slashes, dots or escapes). */
function voiceId(inbound: InboundRequest): string {
  const v = inbound.params.voice_id ?? "";
  if (!/^[A-Za-z0-9_-]{1,100}$/.test(v)) throw new ProtocolInputError("voice_id must be 1-100 letters, digits, _ or -");
  return v;
}

/**
 * ElevenLabs' own default when a request names no model_id (its API reference). Routed as a bare
 * name when a configured ElevenLabs model has it; otherwise the project's stack decides.
 */
export const ELEVENLABS_DEFAULT_MODEL = "eleven_multilingual_v2";

/**
 * POST /text-to-speech/{voice_id}[/stream][/with-timestamps]: `{"text", "model_id"}` → audio (or JSON
 * with base64 audio and alignment, NDJSON when streamed), billed by the characters of text.
 */
function ttsRoute(suffix: "" | "/stream" | "/with-timestamps" | "/stream/with-timestamps"): ProxyRoute {
  return {
    kind: "proxy",
    method: "POST",
    path: `/text-to-speech/:voice_id${suffix}`,
    modality: "tts",
    parse(inbound) {
      voiceId(inbound);
      const json = jsonObjectBody(inbound.body);
      const text = elevenlabsText(json);
      if (text === null) throw new ProtocolInputError('"text" must be a string');
      const state: SpeechState = { json, characters: characterCount(text) };
      return { model: optionalString(json, "model_id"), defaultModel: ELEVENLABS_DEFAULT_MODEL, stream: suffix.startsWith("/stream"), state, estimate: { characters: state.characters } };
    },
    upstreamRequest(inbound, call, target) {
      const state = call.state as SpeechState;
      return {
        method: "POST",
        path: `/text-to-speech/${voiceId(inbound)}${suffix}${forwardQuery(inbound.query)}`,
        headers: { ...forwardableHeaders(inbound.headers), "content-type": "application/json", ...xiAuth(target) },
        body: withModelField(inbound.body, state.json, "model_id", target.modelName),
      };
    },
    meter: charactersMeter,
  };
}

const STATUS_NAMES: Partial<Record<GatewayErrorCode, string>> = { unauthorized: "invalid_api_key", budget_exceeded: "quota_exceeded" };

/** ElevenLabs' error shape: {"detail": {"status", "message"}}; the status names Voxgate's code. */
function elevenlabsError(_status: number, code: GatewayErrorCode, message: string, details?: unknown) {
  return { contentType: "application/json", body: JSON.stringify({ detail: { status: STATUS_NAMES[code] ?? code, code, message, ...(details !== undefined && { details }) } }) };
}

/** /elevenlabs/v1: ElevenLabs' wire protocol. The key arrives as `xi-api-key` (or a Bearer token). */
export const elevenlabsProtocol: VendorProtocol = {
  id: "elevenlabs",
  prefix: "/elevenlabs/v1",
  providerTypes: ["elevenlabs"],
  credential: (headers) => headerValue(headers, "xi-api-key") ?? authorizationToken(headers),
  upstreamAuth: xiAuth,
  errorBody: elevenlabsError,
  routes: [ttsRoute(""), ttsRoute("/stream"), ttsRoute("/with-timestamps"), ttsRoute("/stream/with-timestamps")],
};

/**
 * WebSocket multi-stream-input and stream-input: model on the query (`model_id`), the voice in the
 * path (as `voices:` maps it for the provider), text messages up, `audio` messages down.
 */
function wsRoute(kind: "multi-stream-input" | "stream-input"): WsRoute {
  return {
    path: `/text-to-speech/:voice_id/${kind}`,
    modality: "tts",
    model(inbound) {
      voiceId(inbound);
      return modelQuery(inbound, "model_id");
    },
    upstream: (inbound, target, voices) => ({
      path: `/text-to-speech/${voices.on(voiceId(inbound), target.providerId)}/${kind}${forwardQuery(inbound.query, { model_id: target.modelName })}`,
      headers: xiAuth(target),
    }),
    meter: (_inbound, target) => new TtsContextLedger("elevenlabs", target),
    clientText: () => stripMessageKeys,
    ttsFailover: elevenlabsTtsWire,
  };
}

const KEY = { context: Buffer.from('"contextId"'), audio: Buffer.from('"audio"'), isFinal: Buffer.from('"isFinal"'), error: Buffer.from('"error"') };

/** ElevenLabs errors refusing the client's own input (or its silence): the next vendor would refuse it too. */
export const ELEVENLABS_CLIENT_ERRORS: ReadonlySet<string> = new Set(["invalid_input_message", "input_timeout_exceeded", "invalid_request", "max_character_limit_exceeded"]);

/**
 * ElevenLabs' stream-input and multi-stream-input across a failover seam
 * (src/gateway/failover/tts-legs.ts). A generation is a context (`context_id` up, `contextId` down;
 * stream-input's one context is ""); it is due once flushed, closed, or ended (`text: ""`); audio
 * messages carry a non-empty `audio`, `isFinal` ends it. The connection's first message (the opener
 * with voice settings) goes first to every later leg. The vendor's `{message, error, code}` fails the
 * whole stream (it closes 1008 after it): a vendor-side one fails the leg over, one refusing the
 * client's input passes as it came. Model and voice are on each leg's URL: frames go unchanged.
 */
export function elevenlabsTtsWire(): TtsWire {
  let first = true;
  return {
    request(frame, isBinary) {
      if (isBinary) return null;
      const setup = first;
      first = false;
      const msg = jsonObject(frame.toString("utf8"));
      if (!msg || msg.close_socket === true) return null;
      const context = typeof msg.context_id === "string" ? msg.context_id : "";
      const text = typeof msg.text === "string" ? msg.text : null;
      const due = msg.flush === true || msg.close_context === true || text === "";
      if (text === null && !due) return setup ? { context, cancel: false, due, setup } : null;
      return { context, cancel: false, due, setup };
    },
    answer(frame, isBinary) {
      if (isBinary) return null;
      const context = shortStringField(frame, KEY.context) ?? "";
      if (trueAt(frame, KEY.isFinal)) return { context, kind: "done" };
      if (stringValueAt(frame, KEY.audio)) return { context, kind: "audio" };
      if (!frame.includes(KEY.error)) return null;
      const msg = jsonObject(frame.toString("utf8"));
      if (typeof msg?.error !== "string") return null;
      return ELEVENLABS_CLIENT_ERRORS.has(msg.error) ? { context: null, kind: "done" } : { context: null, kind: "failed" };
    },
    retarget: (frame) => frame,
    failure: (context, message) => JSON.stringify({ message, error: "upstream_unavailable", code: 1011, ...(context !== "" && { contextId: context }) }),
  };
}

/**
 * Fields of ElevenLabs' WebSocket messages that carry a key: its stream-input protocol lets the first
 * message authenticate with `xi_api_key` or `authorization`. The caller's (a Voxgate key) must never
 * reach the vendor, and the provider's own key already went in the handshake.
 */
export const ELEVENLABS_MESSAGE_KEY_FIELDS = ["xi_api_key", "authorization"] as const;

/** A text message without its key-carrying fields (other messages pass untouched). */
export function stripMessageKeys(frame: string): string {
  if (!ELEVENLABS_MESSAGE_KEY_FIELDS.some((f) => frame.includes(f)) || jsonBoundsProblem(frame)) return frame;
  try {
    const msg = JSON.parse(frame) as unknown;
    if (typeof msg !== "object" || msg === null || Array.isArray(msg)) return frame;
    const out = { ...(msg as Record<string, unknown>) };
    let changed = false;
    for (const f of ELEVENLABS_MESSAGE_KEY_FIELDS) {
      if (Object.hasOwn(out, f)) {
        delete out[f];
        changed = true;
      }
    }
    return changed ? JSON.stringify(out) : frame;
  } catch {
    return frame;
  }
}

export const elevenlabsWs: WsProtocol = { protocol: elevenlabsProtocol, routes: [wsRoute("multi-stream-input"), wsRoute("stream-input")] };
