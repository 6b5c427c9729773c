import { STATUS_CODES } from "node:http";
import {
  type GatewayErrorCode,
  headerValue,
  type InboundRequest,
  type Meter,
  type ParsedCall,
  ProtocolInputError,
  type ProxyRoute,
  type Units,
  type UpstreamTarget,
  type VendorProtocol,
} from "../protocol.js";
import { forwardQuery } from "../ws/ws-route.js";
import { jsonAnswerMeter, jsonObjectBody, maxTokens, parsedField } from "./json-body.js";
import { DEFAULT_RESERVED_OUTPUT_TOKENS, promptTokensEstimate } from "../budget-reservations.js";
import { sseTokenMeter, type TokenStream } from "./sse.js";

/**
 * /gemini: Google's Gemini API (generativelanguage), as @google/genai calls it with
 * `httpOptions.baseUrl`: `POST /{v1|v1beta}/models/{model}:generateContent` and
 * `:streamGenerateContent?alt=sse`. The model is in the path only; the key in `x-goog-api-key` or `?key=`.
 */

const ACTIONS = ["generateContent", "streamGenerateContent"] as const;

interface GeminiState {
  version: string;
  action: (typeof ACTIONS)[number];
  /** Characters of the contents' text: the input estimate when a stream is cut before its last chunk. */
  promptChars: number;
}

const keyAuth = (t: UpstreamTarget): Record<string, string> => (t.apiKey ? { "x-goog-api-key": t.apiKey } : {});

/** `{model}:{action}` of the path (the model a bare name, or a Voxgate id over two segments). */
function target(inbound: InboundRequest): { model: string; action: (typeof ACTIONS)[number] } {
  const raw = inbound.params.target ?? "";
  const at = raw.lastIndexOf(":");
  const action = raw.slice(at + 1);
  if (at <= 0 || !(ACTIONS as readonly string[]).includes(action)) {
    throw new ProtocolInputError(`unsupported method ${raw}: generateContent and streamGenerateContent are served`, 404);
  }
  // A Voxgate id `<provider>/<model>` arrives as two path segments (the SDK does not encode the slash).
  const provider = inbound.params.provider;
  const model = raw.slice(0, at);
  return { model: provider ? `${provider}/${model}` : model, action: action as (typeof ACTIONS)[number] };
}

function contentsChars(contents: unknown): number {
  if (typeof contents === "string") return contents.length;
  if (!Array.isArray(contents)) return 0;
  let n = 0;
  for (const c of contents) {
    const parts = (c as { parts?: unknown } | null)?.parts;
    if (!Array.isArray(parts)) continue;
    for (const p of parts) {
      const text = (p as { text?: unknown } | null)?.text;
      if (typeof text === "string") n += text.length;
    }
  }
  return n;
}

/**
 * usageMetadata → units: prompt tokens as input (cached content is part of them), candidates plus
 * thoughts as output (Google bills thinking as output), cached content as cached input, thoughts kept.
 */
export function geminiUsageUnits(usage: unknown): Units | null {
  if (!usage || typeof usage !== "object") return null;
  const u = usage as Record<string, unknown>;
  const n = (v: unknown) => (typeof v === "number" && Number.isSafeInteger(v) && v >= 0 ? v : 0);
  const thoughts = n(u.thoughtsTokenCount);
  const out: Units = { inputTokens: n(u.promptTokenCount) + n(u.toolUsePromptTokenCount), outputTokens: n(u.candidatesTokenCount) + thoughts };
  if (typeof u.cachedContentTokenCount === "number") out.cachedInputTokens = n(u.cachedContentTokenCount);
  if (thoughts > 0) out.reasoningTokens = thoughts;
  return out;
}

/** JSON answer: its usageMetadata read at the end. */
const jsonMeter = (): Meter => jsonAnswerMeter((body) => geminiUsageUnits(parsedField(body, "usageMetadata")) ?? {});

/**
 * SSE answer (`alt=sse`): each `data:` line is a GenerateContentResponse; the last one carrying
 * usageMetadata holds the totals. The first token is the first chunk with candidate text. Cut off
 * before any usage, the output is the number of text chunks and the input the contents' characters / 4.
 */
const GEMINI_STREAM: TokenStream = {
  isDelta: (line) => line.includes('"text"'),
  carriesUsage: (line) => line.includes('"usageMetadata"'),
  usage: (event) => geminiUsageUnits((event as { usageMetadata?: unknown }).usageMetadata),
};

function generateRoute(version: "v1" | "v1beta", voxgateId: boolean): ProxyRoute {
  return {
    kind: "proxy",
    method: "POST",
    path: voxgateId ? `/${version}/models/:provider/:target` : `/${version}/models/:target`,
    modality: "llm",
    parse(inbound): ParsedCall {
      const { model, action } = target(inbound);
      const json = jsonObjectBody(inbound.body);
      const state: GeminiState = { version, action, promptChars: contentsChars(json.contents) };
      const maxOut = maxTokens((json.generationConfig as { maxOutputTokens?: unknown } | undefined)?.maxOutputTokens);
      const estimate = { inputTokens: promptTokensEstimate(state.promptChars), outputTokens: maxOut ?? DEFAULT_RESERVED_OUTPUT_TOKENS };
      return { model: model || null, stream: action === "streamGenerateContent", state, estimate };
    },
    upstreamRequest(inbound, call, t) {
      const state = call.state as GeminiState;
      // Only the body's type and the provider's key: the caller's x-goog-api-key is its Voxgate key.
      const headers = { "content-type": "application/json", accept: call.stream ? "text/event-stream" : "application/json", ...keyAuth(t) };
      return {
        method: "POST",
        // The caller's `key` query parameter is its Voxgate key: dropped (forwardQuery drops key-like parameters).
        path: `/${state.version}/models/${encodeURIComponent(t.modelName)}:${state.action}${forwardQuery(inbound.query, { key: null })}`,
        headers,
        body: inbound.body,
      };
    },
    meter: (call) => (call.stream ? sseTokenMeter(GEMINI_STREAM, (call.state as GeminiState).promptChars) : jsonMeter()),
  };
}

/** Google's status names, the `error.status` the SDKs show. */
const GOOGLE_STATUS: Record<number, string> = {
  400: "INVALID_ARGUMENT",
  401: "UNAUTHENTICATED",
  402: "RESOURCE_EXHAUSTED",
  403: "PERMISSION_DENIED",
  404: "NOT_FOUND",
  413: "INVALID_ARGUMENT",
  415: "INVALID_ARGUMENT",
  429: "RESOURCE_EXHAUSTED",
  502: "UNAVAILABLE",
  503: "UNAVAILABLE",
  504: "DEADLINE_EXCEEDED",
};

/** Google's error body `{error: {code, message, status}}`; Voxgate's code in `details`' reason. */
function geminiError(status: number, code: GatewayErrorCode, message: string, details?: unknown) {
  const body = {
    error: {
      code: status,
      message,
      status: GOOGLE_STATUS[status] ?? STATUS_CODES[status] ?? "UNKNOWN",
      details: [{ "@type": "type.googleapis.com/google.rpc.ErrorInfo", reason: code, domain: "voxgate", ...(details !== undefined && { metadata: details }) }],
    },
  };
  return { contentType: "application/json", body: JSON.stringify(body) };
}

export const geminiProtocol: VendorProtocol = {
  id: "gemini",
  prefix: "/gemini",
  providerTypes: ["gemini"],
  credential: (headers, query) => headerValue(headers, "x-goog-api-key") ?? query.get("key"),
  upstreamAuth: keyAuth,
  errorBody: geminiError,
  routes: [generateRoute("v1", false), generateRoute("v1beta", false), generateRoute("v1", true), generateRoute("v1beta", true)],
};
