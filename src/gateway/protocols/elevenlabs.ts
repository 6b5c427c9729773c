import { TtsContextLedger } from "../audio/tts-contexts.js";
import { characterCount, elevenlabsText } from "../audio/tts-units.js";
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
import { charactersMeter, modelQuery, optionalString, type SpeechState, withModelField } from "./audio-common.js";
import { jsonObjectBody } from "./json-body.js";

const xiAuth = (t: UpstreamTarget): Record<string, string> => (t.apiKey ? { "xi-api-key": t.apiKey } : {});

/** A voice id goes into the upstream path: a plain identifier only (no slashes, dots or escapes). */
function voiceId(inbound: InboundRequest): string {
  const v = inbound.params.voice_id ?? "";
  if (!/^[A-Za-z0-9_-]{1,100}$/.test(v)) throw new ProtocolInputError("voice_id must be 1-100 letters, digits, _ or -");
  return v;
}

/** POST /text-to-speech/{voice_id}[/stream]: `{"text", "model_id"}` → audio, billed by the characters of text. */
function ttsRoute(stream: boolean): ProxyRoute {
  const suffix = stream ? "/stream" : "";
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
      return { model: optionalString(json, "model_id"), stream, state, estimate: { characters: state.characters } };
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
  routes: [ttsRoute(false), ttsRoute(true)],
};

/** WebSocket multi-stream-input: model on the query (`model_id`), text messages up, `audio` messages down. */
function wsRoute(kind: "multi-stream-input" | "stream-input"): WsRoute {
  return {
    path: `/text-to-speech/:voice_id/${kind}`,
    modality: "tts",
    model(inbound) {
      voiceId(inbound);
      return modelQuery(inbound, "model_id");
    },
    upstream: (inbound, target) => ({
      path: `/text-to-speech/${voiceId(inbound)}/${kind}${forwardQuery(inbound.query, { model_id: target.modelName })}`,
      headers: xiAuth(target),
    }),
    meter: (_inbound, target) => new TtsContextLedger("elevenlabs", target),
  };
}

export const elevenlabsWs: WsProtocol = { protocol: elevenlabsProtocol, routes: [wsRoute("multi-stream-input"), wsRoute("stream-input")] };
