import type { IncomingHttpHeaders } from "node:http";
import { binaryAudioMeter } from "../audio/stream-meters.js";
import { jsonObject } from "../audio/stt-units.js";
import { authorizationToken, type GatewayErrorCode, headerValue, type InboundRequest, type Units, type UpstreamTarget, type VendorProtocol } from "../protocol.js";
import type { StreamMeter } from "../ws/relay.js";
import { type ClosingRefusal, forwardQuery, type WsProtocol, type WsRoute } from "../ws/ws-route.js";
import { modelQuery } from "./audio-common.js";

/**
 * /assemblyai: AssemblyAI Universal-Streaming (v3) at its own path, `/assemblyai/v3/ws`, as the
 * `assemblyai` SDK's StreamingTranscriber dials it with `websocketBaseUrl` (which must be wss:, so
 * Voxgate sits behind a TLS terminator for it). Binary PCM up; `Begin`, `Turn`, `Termination` down.
 * The key is the bare `Authorization` header (Node), or a temporary `token` query parameter.
 */

const keyAuth = (t: UpstreamTarget): Record<string, string> => (t.apiKey ? { authorization: t.apiKey } : {});

/** The caller's key: `Authorization: <key>` (bare, as the SDK sends it), a Bearer token, or `?token=`. */
function credential(headers: IncomingHttpHeaders, query: URLSearchParams): string | null {
  const bearer = authorizationToken(headers);
  if (bearer) return bearer;
  const raw = headerValue(headers, "authorization")?.trim();
  if (raw && !/\s/.test(raw)) return raw;
  return query.get("token");
}

/** AssemblyAI's error body `{error: "<message>"}` (its SDK throws Error(body.error)); Voxgate's code beside it. */
function assemblyaiError(_status: number, code: GatewayErrorCode, message: string, details?: unknown) {
  return { contentType: "application/json", body: JSON.stringify({ error: message, code, ...(details !== undefined && { details }) }) };
}

export const assemblyaiProtocol: VendorProtocol = {
  id: "assemblyai",
  prefix: "/assemblyai",
  providerTypes: ["assemblyai"],
  credential,
  upstreamAuth: keyAuth,
  errorBody: assemblyaiError,
  routes: [],
};

/**
 * The streaming API's base for a provider: its base_url without the REST API's `/v2`, and the
 * streaming host in place of the REST host (the default base_url is https://api.assemblyai.com/v2).
 */
export function streamingBase(baseUrl: string): string {
  const base = baseUrl.replace(/\/+$/, "").replace(/\/v2$/, "");
  return base.replace(/^(https?:\/\/)api\.assemblyai\.com(?=$|\/|:)/i, "$1streaming.assemblyai.com");
}

/** Bytes per second of the declared raw audio: `encoding` pcm_s16le (default, 2 bytes) or pcm_mulaw (1), at `sample_rate`. */
export function assemblyaiBytesPerSecond(query: URLSearchParams): number | null {
  const rate = Number(query.get("sample_rate"));
  if (!Number.isFinite(rate) || rate <= 0) return null;
  const encoding = query.get("encoding") ?? "pcm_s16le";
  const width = encoding === "pcm_s16le" ? 2 : encoding === "pcm_mulaw" ? 1 : null;
  return width === null ? null : rate * width;
}

const TURN = Buffer.from('"Turn"');
const TERMINATION = Buffer.from('"Termination"');

/**
 * Universal-Streaming: binary frames are audio; `Turn` answers; `Termination` carries the audio's
 * seconds (`audio_duration_seconds`) and the session's (`session_duration_seconds`, what AssemblyAI
 * bills). Without it, the audio is timed from its bytes and the session from the meter's own clock.
 */
export function assemblyaiMeter(bytesPerSecond: number | null, now: () => number = () => performance.now()): StreamMeter {
  const opened = now();
  let audioSeconds: number | null = null;
  let sessionSeconds: number | null = null;
  return binaryAudioMeter({
    answer(frame) {
      if (frame.includes(TURN)) return true;
      if (frame.includes(TERMINATION)) {
        const msg = jsonObject(frame.toString("utf8"));
        const n = (v: unknown) => (typeof v === "number" && Number.isFinite(v) && v >= 0 ? v : null);
        audioSeconds = n(msg?.audio_duration_seconds) ?? audioSeconds;
        sessionSeconds = n(msg?.session_duration_seconds) ?? sessionSeconds;
      }
      return false;
    },
    units(audioBytes) {
      const decoded = bytesPerSecond ? audioBytes / bytesPerSecond : null;
      const out: Units = {};
      const seconds = audioSeconds ?? decoded;
      if (seconds !== null) out.audioSeconds = Math.round(seconds * 1000) / 1000;
      out.billedSeconds = Math.round((sessionSeconds ?? (now() - opened) / 1000) * 1000) / 1000;
      return out;
    },
  });
}

/** WebSocket /v3/ws: model from `speech_model` (else the project's stack), rewritten to the routed model's name. */
const streamingRoute: WsRoute = {
  path: "/v3/ws",
  modality: "stt",
  model: (inbound: InboundRequest) => modelQuery(inbound, "speech_model"),
  upstream: (inbound, target) => ({
    baseUrl: streamingBase(target.baseUrl),
    path: `/v3/ws${forwardQuery(inbound.query, { speech_model: target.modelName })}`,
    headers: keyAuth(target),
  }),
  meter: (inbound) => assemblyaiMeter(assemblyaiBytesPerSecond(inbound.query)),
};

/**
 * Voxgate's refusal as AssemblyAI refuses a stream: the upgrade completes, an `Error` frame carries
 * the message, and the close carries AssemblyAI's code (the SDK's StreamingErrorType): its SDK turns
 * a refused handshake into "Unexpected server response: 404" and retries it, but the frame or close
 * into a StreamingError with this message, retried only for codes it deems transient.
 */
export function assemblyaiCloseRefusal(status: number, code: GatewayErrorCode, message: string): ClosingRefusal {
  const closeCode = assemblyaiCloseCode(status, code);
  return { frame: JSON.stringify({ type: "Error", error_code: closeCode, error: message }), closeCode, reason: message };
}

function assemblyaiCloseCode(status: number, code: GatewayErrorCode): number {
  if (status === 401 || status === 403) return 4001; // Not Authorized
  if (status === 402) return 4002; // Insufficient funds
  if (code === "too_many_streams") return 3009; // Too many concurrent sessions
  if (status === 429) return 4029; // Rate limited
  if (status >= 400 && status < 500) return 3006; // Input validation error (an unknown speech_model)
  return 3005; // Server error
}

export const assemblyaiWs: WsProtocol = { protocol: assemblyaiProtocol, routes: [streamingRoute], closeRefusal: assemblyaiCloseRefusal };
