import { deepgramAudioFormat, deepgramPrerecordedSeconds, jsonObject, rawAudioSeconds, wavSeconds } from "../audio/stt-units.js";
import { deepgramListenMeter, deepgramSpeakMeter } from "../audio/stream-meters.js";
import { characterCount, deepgramSpeakText } from "../audio/tts-units.js";
import { shortStringField } from "../audio/tts-contexts.js";
import { deepgramLiveWire } from "../failover/deepgram-live.js";
import { deepgramToOpenAiBridge } from "../failover/openai-transcription-leg.js";
import type { TtsWire } from "../failover/tts-legs.js";
import { authorizationToken, forwardableHeaders, type InboundRequest, ProtocolInputError, type ProxyRoute, type UpstreamTarget, type VendorProtocol } from "../protocol.js";
import { forwardQuery, subprotocolToken, type WsProtocol, type WsRoute } from "../ws/ws-route.js";
import { bufferedJsonMeter, charactersMeter, modelQuery, type SpeechState } from "./audio-common.js";

const tokenAuth = (t: UpstreamTarget): Record<string, string> => (t.apiKey ? { authorization: `Token ${t.apiKey}` } : {});

/** Every Deepgram route names its model on the URL (`model=`): sent on as the vendor's name, beside the caller's other parameters. */
const upstreamPath = (path: string, inbound: InboundRequest, target: UpstreamTarget) => `${path}${forwardQuery(inbound.query, { model: target.modelName })}`;

/** A POST route: the body (audio, JSON) sent on unchanged with the caller's forwardable headers and the provider's key. */
function postRoute(route: Pick<ProxyRoute, "path" | "modality" | "parse" | "meter">): ProxyRoute {
  return {
    kind: "proxy",
    method: "POST",
    ...route,
    upstreamRequest: (inbound, _call, target) => ({
      method: "POST",
      path: upstreamPath(route.path, inbound, target),
      headers: { ...forwardableHeaders(inbound.headers), ...tokenAuth(target) },
      body: inbound.body,
    }),
  };
}

/** A WebSocket route: the model from the URL, the upstream URL as postRoute's, the provider's key. */
function wsRoute(route: Omit<WsRoute, "model" | "upstream">): WsRoute {
  return { ...route, model: modelQuery, upstream: (inbound, target) => ({ path: upstreamPath(route.path, inbound, target), headers: tokenAuth(target) }) };
}

interface ListenState {
  format: ReturnType<typeof deepgramAudioFormat>;
  /** Seconds measured from the uploaded audio (raw encoding or WAV), the fallback when the answer has none. */
  uploadSeconds: number | null;
}

/** POST /listen: pre-recorded audio (raw bytes, or JSON {url}); billed by the answer's metadata.duration. */
const listenRoute = postRoute({
  path: "/listen",
  modality: "stt",
  parse(inbound) {
    const type = String(inbound.headers["content-type"] ?? "").toLowerCase();
    if (type.startsWith("application/json")) {
      const url = jsonObject(inbound.body.toString("utf8"))?.url;
      if (typeof url !== "string" || url.length === 0) throw new ProtocolInputError("a JSON body must be {\"url\": \"<audio url>\"}");
    } else if (inbound.body.byteLength === 0) throw new ProtocolInputError("no audio in the request body");
    const format = deepgramAudioFormat(inbound.query);
    const uploadSeconds = type.startsWith("application/json") ? null : (rawAudioSeconds(inbound.body.byteLength, format) ?? wavSeconds(inbound.body));
    const state: ListenState = { format, uploadSeconds };
    return { model: modelQuery(inbound), stream: false, state, ...(uploadSeconds !== null && { estimate: { audioSeconds: uploadSeconds } }) };
  },
  meter(call) {
    const state = call.state as ListenState;
    return bufferedJsonMeter((json) => {
      const seconds = deepgramPrerecordedSeconds(json, state.format) ?? state.uploadSeconds;
      return seconds === null ? {} : { audioSeconds: seconds };
    });
  },
});

/** POST /speak: `{"text"}` → audio; billed by the characters of the text. */
const speakRoute = postRoute({
  path: "/speak",
  modality: "tts",
  parse(inbound) {
    const json = jsonObject(inbound.body.toString("utf8"));
    const text = deepgramSpeakText(json);
    if (json === null || text === null) throw new ProtocolInputError('the body must be a JSON object with a "text" string');
    const state: SpeechState = { json, characters: characterCount(text) };
    return { model: modelQuery(inbound), stream: true, state };
  },
  meter: (call) => charactersMeter(call),
});

/** Deepgram's error shape: err_code carries Voxgate's code. */
function deepgramError(_status: number, code: string, message: string, details?: unknown) {
  return { contentType: "application/json", body: JSON.stringify({ err_code: code, err_msg: message, ...(details !== undefined && { details }) }) };
}

/** The key: `Authorization: Token|Bearer` (server SDKs, LiveKit plugin) or the `token, <key>` subprotocol (browsers). */
const deepgramCredential = (headers: InboundRequest["headers"]) => authorizationToken(headers) ?? subprotocolToken(headers);

/** /deepgram/v1: Deepgram's wire protocol (listen, speak). */
export const deepgramProtocol: VendorProtocol = {
  id: "deepgram",
  prefix: "/deepgram/v1",
  providerTypes: ["deepgram"],
  credential: deepgramCredential,
  upstreamAuth: tokenAuth,
  errorBody: deepgramError,
  routes: [listenRoute, speakRoute],
};

/** WebSocket listen: binary audio frames up, `Results` down, `Metadata.duration` after CloseStream. */
const listenWs = wsRoute({
  path: "/listen",
  modality: "stt",
  meter: (inbound) => deepgramListenMeter(deepgramAudioFormat(inbound.query)),
  errorFrame: deepgramWsError,
  failover: (inbound) => deepgramLiveWire(inbound.query),
  crossFailover: (inbound) => {
    const openai = deepgramToOpenAiBridge(inbound.query);
    return openai ? [openai] : [];
  },
});

/** Deepgram's WebSocket error frame (listen and speak; its SDKs raise it as a message or `error` event). */
function deepgramWsError(code: string, message: string): string {
  return JSON.stringify({ type: "Error", description: message, message: code, variant: "voxgate" });
}

/** WebSocket speak: `Speak` text messages up, binary audio down. */
const speakWs = wsRoute({ path: "/speak", modality: "tts", meter: () => deepgramSpeakMeter(), ttsFailover: deepgramSpeakWire });

const TYPE = Buffer.from('"type"');

/**
 * Deepgram speak across a failover seam (src/gateway/failover/tts-legs.ts). Its messages name no
 * generation: one is the `Speak` texts up to a `Flush` (or `Close`), numbered here in order, due once
 * flushed; binary frames are the audio of the oldest flushed one, `Flushed` ends it, `Clear` cancels
 * all. `{"type":"Error"}` fails the leg. The model (its voice) is on each leg's URL: frames go unchanged.
 */
function deepgramSpeakWire(): TtsWire {
  let n = 0;
  return {
    request(frame, isBinary) {
      if (isBinary) return null;
      const type = shortStringField(frame, TYPE);
      if (type === "Speak") return { context: String(n), cancel: false, due: false };
      if (type === "Flush" || type === "Close") return { context: String(n++), cancel: false, due: true };
      if (type !== "Clear") return null;
      n++;
      return { context: null, cancel: true, due: false };
    },
    answer(frame, isBinary, oldest) {
      if (isBinary) return { context: oldest(), kind: "audio" };
      const type = shortStringField(frame, TYPE);
      if (type === "Flushed") return { context: oldest(), kind: "done" };
      return type === "Error" ? { context: null, kind: "failed" } : null;
    },
    retarget: (frame) => frame,
    failure: (_context, message) => deepgramWsError("upstream_unavailable", message),
  };
}

export const deepgramWs: WsProtocol = { protocol: deepgramProtocol, routes: [listenWs, speakWs] };
