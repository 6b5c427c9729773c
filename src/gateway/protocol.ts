import type { IncomingHttpHeaders } from "node:http";
import type { Modality, ProviderType } from "../config/schema.js";

/**
 * The contract between the gateway core (src/gateway/pipeline.ts) and one vendor's wire protocol
 * (src/gateway/protocols/<vendor>.ts). A protocol module declares its prefix, its routes, where the
 * vendor's SDK puts the model and the key, how a request is rewritten for the upstream, how units are
 * metered from the answer, and its error shape. The core does everything else: attribution, auth,
 * model resolution, budgets, rate limits, fallback, the upstream call, timing and recording.
 *
 * STABLE: other branches (gateway-audio) implement this interface. A change here is committed on its
 * own with a message saying so.
 */

/** Which vendor protocol a prefix speaks (the prefix table of docs/api/gateway.md). */
export type ProtocolId = "openai" | "anthropic" | "deepgram" | "elevenlabs" | "cartesia" | "gemini" | "assemblyai";

/** The inbound request as the core hands it to a protocol: body fully buffered (for parse and replay). */
export interface InboundRequest {
  method: string;
  /** Path below the vendor prefix, e.g. "/chat/completions". */
  path: string;
  /** Route parameters of the matched route path (e.g. voice_id). */
  params: Readonly<Record<string, string>>;
  query: URLSearchParams;
  /** Lower-cased header names, as node parses them. */
  headers: IncomingHttpHeaders;
  /** The body, read up to serve.body_limit_bytes. Empty for GET. */
  body: Buffer;
}

/** What a protocol reads from a request before routing. */
export interface ParsedCall {
  /** The model the caller named (Voxgate id, bare vendor name or stack:<name>); null = not named. */
  model: string | null;
  /**
   * The vendor's own default model for a request that names none (ElevenLabs' eleven_multilingual_v2):
   * routed when configured, else the project's default_stack decides.
   */
  defaultModel?: string;
  /** The caller asked for a streamed answer (SSE); selects stream metering and TTFT. */
  stream: boolean;
  /**
   * Protocol-private state carried to upstreamRequest and meter (e.g. the parsed JSON body, the
   * characters of a TTS input). Opaque to the core.
   */
  state?: unknown;
  /**
   * The units this call may use at most, as far as the request tells (prompt size and max_tokens,
   * characters to speak): what a `block` budget reserves before forwarding. Absent: the core's
   * default estimate for the modality (src/gateway/budget-reservations.ts).
   */
  estimate?: Units;
}

/** A request refused by parse: malformed body, missing field. Always a 4xx in the vendor's error shape. */
export class ProtocolInputError extends Error {
  override name = "ProtocolInputError";
  constructor(
    message: string,
    readonly status: 400 | 404 | 405 | 413 | 415 | 422 = 400,
  ) {
    super(message);
  }
}

/** The provider and model a call goes to, as resolved by the core (one per attempt). */
export interface UpstreamTarget {
  /** Voxgate model id `<provider>/<model>`, what the record's model_id is. */
  modelId: string;
  modality: Modality;
  providerId: string;
  providerType: ProviderType;
  /** The vendor's own model name (what goes on the wire). */
  modelName: string;
  /** Base URL of the provider's API, no trailing slash (e.g. https://api.openai.com/v1). */
  baseUrl: string;
  /** The provider's own key (never logged, never answered). Empty for keyless self-hosted servers. */
  apiKey: string;
}

/** The request the core sends upstream: path is appended to target.baseUrl's path. */
export interface UpstreamRequest {
  method: string;
  /** Path (with query string) below target.baseUrl, e.g. "/chat/completions". */
  path: string;
  /** Headers to send. The core adds nothing but host/content-length; the protocol sets auth. */
  headers: Record<string, string>;
  body: Buffer | string | null;
}

/** Units counted from the wire (never from what the client claims). Absent = not applicable. */
export interface Units {
  inputTokens?: number;
  outputTokens?: number;
  cachedInputTokens?: number;
  /** Of inputTokens / outputTokens, the audio ones (OpenAI realtime). */
  inputAudioTokens?: number;
  outputAudioTokens?: number;
  /** The reasoning part of outputTokens (OpenAI Responses), kept in the record's metadata. */
  reasoningTokens?: number;
  audioSeconds?: number;
  /**
   * Seconds the vendor bills when they differ from the audio's (AssemblyAI streaming bills the open
   * session): kept as the record's metadata.billed_seconds, and what a per-minute price is applied to.
   */
  billedSeconds?: number;
  characters?: number;
}

/**
 * Counts units from one upstream answer. The core feeds it the status, headers and every body
 * chunk as it passes through (no copy, no re-serialisation), then asks for the units once the
 * answer ended or was cut off (partial usage of an aborted stream).
 */
export interface Meter {
  /** Called once with the upstream status and headers. */
  headers?(status: number, headers: IncomingHttpHeaders): void;
  /**
   * Called per body chunk in order. Returns true when this chunk carries the first token/audio byte
   * the caller waits for (TTFT); the core times the first chunk for which it returns true (or the
   * first chunk at all when the meter never says).
   */
  chunk(chunk: Buffer): boolean | undefined;
  /** Units of the whole answer (or what arrived of it). `complete` is false for a cut-off answer. */
  units(complete: boolean): Units;
}

/** A route answered by the gateway itself (no upstream): e.g. GET /openai/v1/models. */
export interface LocalRouteContext {
  inbound: InboundRequest;
  /** The routable model ids of this protocol, by modality, and the configured stacks. */
  routable: RoutableView;
}

export interface RoutableModel {
  modelId: string;
  modality: Modality;
  providerId: string;
  providerType: ProviderType;
  modelName: string;
}

export interface RoutableView {
  models: RoutableModel[];
  /** stacks from voxgate.yaml: name → {stt?, llm?, tts?} model ids. */
  stacks: Record<string, Partial<Record<Modality, string>>>;
}

export interface LocalAnswer {
  status: number;
  headers: Record<string, string>;
  body: string | Buffer;
}

interface RouteBase {
  method: "GET" | "POST";
  /** Path below the prefix in Hono syntax: "/chat/completions", "/text-to-speech/:voice_id/stream". */
  path: string;
}

/** A route forwarded to a provider. */
export interface ProxyRoute extends RouteBase {
  kind: "proxy";
  modality: Modality;
  /** Reads model and stream flag; throws ProtocolInputError for a malformed request. */
  parse(inbound: InboundRequest): ParsedCall;
  /**
   * The upstream request for one attempt: the model rewritten to target.modelName, the caller's
   * credential removed, the provider's own auth set, and for chat streams the usage block requested.
   */
  upstreamRequest(inbound: InboundRequest, call: ParsedCall, target: UpstreamTarget): UpstreamRequest;
  /** A fresh meter for one attempt's answer. */
  meter(call: ParsedCall, target: UpstreamTarget): Meter;
}

/** A route the gateway answers itself. */
export interface LocalRoute extends RouteBase {
  kind: "local";
  answer(ctx: LocalRouteContext): LocalAnswer;
}

export type GatewayRoute = ProxyRoute | LocalRoute;

/** Error codes the gateway answers with, put into each vendor's error shape by errorBody. */
export type GatewayErrorCode =
  | "invalid_request"
  | "unauthorized"
  | "forbidden"
  | "model_not_found"
  | "payload_too_large"
  | "budget_exceeded"
  | "rate_limited"
  | "too_many_streams"
  | "upstream_unavailable"
  | "upstream_timeout"
  | "loopback_only";

export interface ProtocolError {
  contentType: string;
  body: string;
}

export interface VendorProtocol {
  id: ProtocolId;
  /** Path prefix without trailing slash, e.g. "/openai/v1"; may follow /p/{project}/s/{session}. */
  prefix: string;
  /** Provider types this prefix can route to (a model of another type is not routable here). */
  providerTypes: readonly ProviderType[];
  /**
   * The caller's Voxgate key from wherever the vendor's SDK sends it (Authorization Bearer/Token,
   * x-api-key, xi-api-key, a query parameter or a WebSocket subprotocol); null when absent.
   */
  credential(headers: IncomingHttpHeaders, query: URLSearchParams): string | null;
  /** The provider's own auth headers for an upstream request. */
  upstreamAuth(target: UpstreamTarget): Record<string, string>;
  /** The vendor's own error body; `code` is Voxgate's (budget_exceeded…) and stays visible in it. */
  errorBody(status: number, code: GatewayErrorCode, message: string, details?: unknown): ProtocolError;
  routes: readonly GatewayRoute[];
}

/**
 * Inbound headers a protocol never forwards: hop-by-hop headers, every header that can carry the
 * caller's Voxgate key, and Voxgate's own attribution headers.
 */
export const NEVER_FORWARDED = new Set([
  "host",
  "connection",
  "keep-alive",
  "proxy-connection",
  "transfer-encoding",
  "upgrade",
  "te",
  "trailer",
  "content-length",
  "authorization",
  "x-api-key",
  "xi-api-key",
  "api-key",
  "x-goog-api-key",
  "proxy-authorization",
  "cookie",
  "x-voxgate-project",
  "x-voxgate-session",
  "accept-encoding",
]);

/**
 * The inbound headers safe to forward (vendor headers such as anthropic-version, openai-beta,
 * content-type), lower-cased. Protocols start from this and add the provider's auth.
 */
export function forwardableHeaders(headers: IncomingHttpHeaders): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name in headers) {
    if (NEVER_FORWARDED.has(name) || name.startsWith("x-voxgate-") || name.startsWith("sec-websocket-")) continue;
    const v = headers[name];
    if (v === undefined) continue;
    out[name] = Array.isArray(v) ? v.join(", ") : v;
  }
  return out;
}

/** `Authorization: Bearer <token>` or `Token <token>` (Deepgram); null when absent or another scheme. */
export function authorizationToken(headers: IncomingHttpHeaders): string | null {
  const h = headers.authorization;
  if (!h) return null;
  const m = /^(?:Bearer|Token)[ \t]+(\S+)[ \t]*$/i.exec(h);
  return m?.[1] ?? null;
}

/** A single header value (the first when repeated). */
export function headerValue(headers: IncomingHttpHeaders, name: string): string | undefined {
  const v = headers[name];
  return Array.isArray(v) ? v[0] : v;
}
