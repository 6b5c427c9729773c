import type { IncomingHttpHeaders } from "node:http";
import type { Modality } from "../../config/schema.js";
import type { GatewayErrorCode, InboundRequest, UpstreamTarget, VendorProtocol } from "../protocol.js";
import type { LiveSttWire } from "../failover/deepgram-live.js";
import type { LegBridge } from "../failover/switching-upstream.js";
import type { LatestRequest, TtsWire } from "../failover/tts-legs.js";
import type { VoiceMap } from "../failover/voices.js";
import type { StreamMeter } from "./relay.js";

/**
 * A WebSocket route of a vendor protocol (the WebSocket counterpart of protocol.ts's ProxyRoute):
 * where the model is named at connect time (or, with `inBand`, inside messages), the upstream
 * socket's path/headers for one attempt, how its frames are metered, and an optional gate on client
 * text frames (a model named inside a message: rewritten to the vendor's name, or refused in-band).
 * Everything else (auth, limits, budget, fallback at connect, relay, recording) is the WebSocket
 * pipeline's (src/gateway/ws/pipeline.ts).
 */
export interface WsRoute {
  /** Path below the protocol prefix in Hono syntax, e.g. "/listen", "/text-to-speech/:voice_id/multi-stream-input". */
  path: string;
  modality: Modality;
  /** Routes sharing a path: the first whose accepts() is true (or that has none) serves the upgrade. */
  accepts?(query: URLSearchParams): boolean;
  /** The model the caller named on the URL (null: not named); throws ProtocolInputError when malformed. */
  model(inbound: InboundRequest): string | null;
  /**
   * The upstream socket for one attempt: path (with query) below target.baseUrl (or `baseUrl` when the
   * vendor streams from another host than its REST API), headers, subprotocols. A voice named on the
   * URL goes as `voices` maps it for the target's provider.
   */
  upstream(inbound: InboundRequest, target: UpstreamTarget, voices: VoiceMap): { baseUrl?: string; path: string; headers: Record<string, string>; protocols?: string[] };
  meter(inbound: InboundRequest, target: UpstreamTarget): StreamMeter;
  /**
   * Gates each client text frame on its way upstream (null: frames pass untouched): returns the text
   * to send (a model named in it rewritten to the vendor's name), or null when the frame names a
   * model this stream cannot serve (`models.refuse` has answered it in-band and recorded it).
   */
  clientText?(target: UpstreamTarget, models: StreamModels, meter: StreamMeter): ((frame: string) => string | null) | null;
  /**
   * A live STT route that can move a running stream to the next candidate (src/gateway/failover/):
   * how its frames read across a seam, or null when this stream's audio cannot be replayed.
   */
  failover?(inbound: InboundRequest): LiveSttWire | null;
  /**
   * Live STT: vendors of other protocols this stream can fail over to mid-call, its frames translated
   * both ways (none: only candidates of the route's own protocol).
   */
  crossFailover?(inbound: InboundRequest): readonly LegBridge[];
  /**
   * A TTS route whose generations are retried on the next candidate when the vendor fails one before
   * its first audio (src/gateway/failover/tts-legs.ts): a new wire for one stream.
   */
  ttsFailover?(voices: VoiceMap): TtsWire;
  /**
   * TTS: vendors of other protocols a generation can be retried on, where `voices:` maps its voice
   * (src/gateway/failover/tts-translate.ts); `latest` is the stream's latest generation request.
   */
  ttsCrossFailover?(voices: VoiceMap, latest: () => LatestRequest | null): readonly LegBridge[];
  /** The vendor names the model inside messages: the upgrade completes first and the first message picks it. */
  inBand?: InBandModels;
  /**
   * Where the protocol has one and `inBand` is not given: the vendor's own in-band error, for the
   * stream (one ended by its budget) or answering a client frame (`frame`).
   */
  errorFrame?(code: GatewayErrorCode, message: string, frame?: string | null): string;
}

/** How a route names models inside messages, for the upgrade that completes before any model is known. */
export interface InBandModels {
  /** The model a client text frame names (null: none). */
  named(frame: string): string | null;
  /** A frame asking for work before any model is named (audio): the project's default_stack serves it. */
  work(frame: Buffer, isBinary: boolean): boolean;
  /** The vendor's own in-band error message answering a client frame (in that frame's context). */
  error(frame: string | null, code: GatewayErrorCode, message: string): string;
}

/** What a route's gate may ask of the stream about a model named in a message. */
export interface StreamModels {
  /** The target a named model resolves to on this route, or why it cannot be served. */
  resolve(named: string): { ok: true; target: UpstreamTarget } | { ok: false; code: GatewayErrorCode; message: string };
  /** Answers a frame in-band with the vendor's error (not forwarded) and records a refused attempt. */
  refuse(frame: string, named: string, code: GatewayErrorCode, message: string): void;
  /** The voice the stream's provider speaks for one a message names (the `voices:` map). */
  voice(requested: string): string;
}

export interface WsProtocol {
  protocol: VendorProtocol;
  routes: readonly WsRoute[];
  /**
   * Refuses by completing the upgrade, then sending `frame` (the vendor's in-band error) and closing
   * with the vendor's own close code and reason: for SDKs that report a refused handshake only as
   * "Unexpected server response: 404" (AssemblyAI's). Absent: the refusal is the HTTP status of the
   * upgrade, which Deepgram's SDK needs (it redials a closed socket, but stops on a refused upgrade).
   */
  closeRefusal?(status: number, code: GatewayErrorCode, message: string): ClosingRefusal;
}

/** A refusal as a vendor sends it on an open socket: an optional error frame, then the close. */
export interface ClosingRefusal {
  frame?: string;
  closeCode: number;
  reason: string;
}

/** The ws:// or wss:// URL of a provider base URL plus a path (http → ws, https → wss). */
export function wsUrl(baseUrl: string, path: string): string {
  const base = baseUrl.replace(/^http(s?):\/\//i, (_m, s: string) => `ws${s}://`);
  return `${base.replace(/\/+$/, "")}${path}`;
}

/** Query parameters that may carry a caller's key: never forwarded upstream. */
export const CREDENTIAL_QUERY_PARAMS = new Set(["api_key", "token", "xi-api-key", "xi_api_key", "authorization", "access_token", "key"]);

/** The caller's query without its credential, with `model` replaced when given; "" or "?…". */
export function forwardQuery(query: URLSearchParams, replace: Record<string, string | null> = {}): string {
  const out = new URLSearchParams();
  for (const [k, v] of query) if (!CREDENTIAL_QUERY_PARAMS.has(k.toLowerCase()) && !(k in replace)) out.append(k, v);
  for (const [k, v] of Object.entries(replace)) if (v !== null) out.set(k, v);
  const s = out.toString();
  return s ? `?${s}` : "";
}

/**
 * A key sent as a WebSocket subprotocol, the way browser SDKs must: Deepgram's `token, <key>`,
 * OpenAI's `openai-insecure-api-key.<key>`. Null when none.
 */
export function subprotocolToken(headers: IncomingHttpHeaders): string | null {
  const raw = headers["sec-websocket-protocol"];
  const v = Array.isArray(raw) ? raw.join(",") : raw;
  if (!v) return null;
  const parts = v.split(",").map((p) => p.trim());
  const at = parts.findIndex((p) => p.toLowerCase() === "token" || p.toLowerCase() === "bearer");
  if (at >= 0 && parts[at + 1]) return parts[at + 1] ?? null;
  const prefixed = parts.find((p) => p.startsWith("openai-insecure-api-key."));
  return prefixed ? prefixed.slice("openai-insecure-api-key.".length) : null;
}
