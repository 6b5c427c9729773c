import { authorizationToken, type GatewayErrorCode, headerValue, type Meter, type ParsedCall, ProtocolInputError, type Units, type UpstreamTarget, type VendorProtocol } from "../protocol.js";
import { DEFAULT_RESERVED_OUTPUT_TOKENS, promptTokensEstimate } from "../budget-reservations.js";
import { contentChars, jsonObjectBody, maxTokens, parsedField, llmJsonRoute } from "./json-body.js";
import { sseDataMeter } from "./sse.js";

/** The API version sent when the caller's SDK sent none. */
export const ANTHROPIC_VERSION = "2023-06-01";

const ERROR_TYPES: Record<GatewayErrorCode, string> = {
  invalid_request: "invalid_request_error",
  unauthorized: "authentication_error",
  forbidden: "permission_error",
  model_not_found: "not_found_error",
  payload_too_large: "request_too_large",
  budget_exceeded: "budget_exceeded",
  rate_limited: "rate_limit_error",
  too_many_streams: "rate_limit_error",
  upstream_unavailable: "api_error",
  upstream_timeout: "api_error",
  loopback_only: "permission_error",
};

interface MessagesState {
  json: Record<string, unknown>;
  promptChars: number;
  version: string;
  beta: string | undefined;
}

/**
 * Anthropic usage → units. Anthropic's input_tokens excludes cache reads and writes; Voxgate's input
 * tokens include them (cached tokens are a subset of the prompt, billed at the cached rate), so they
 * are added back. Cache writes are counted as input at the input rate.
 */
export function anthropicUsageUnits(usage: unknown, into: Units = {}): Units {
  if (!usage || typeof usage !== "object") return into;
  const u = usage as Record<string, unknown>;
  const n = (v: unknown) => (typeof v === "number" && Number.isSafeInteger(v) && v >= 0 ? v : undefined);
  const input = n(u.input_tokens);
  const read = n(u.cache_read_input_tokens) ?? 0;
  const created = n(u.cache_creation_input_tokens) ?? 0;
  if (input !== undefined) {
    into.inputTokens = input + read + created;
    into.cachedInputTokens = read;
  }
  const output = n(u.output_tokens);
  if (output !== undefined) into.outputTokens = output;
  return into;
}

function parseMessages(inbound: { body: Buffer; headers: Parameters<typeof headerValue>[0] }): ParsedCall {
  const json = jsonObjectBody(inbound.body);
  const model = json.model;
  if (model !== undefined && model !== null && typeof model !== "string") throw new ProtocolInputError("model: Input should be a valid string");
  if (!Array.isArray(json.messages)) throw new ProtocolInputError("messages: Field required");
  let promptChars = typeof json.system === "string" ? json.system.length : 0;
  for (const m of json.messages as unknown[]) promptChars += contentChars((m as { content?: unknown } | null)?.content);
  const state: MessagesState = {
    json,
    promptChars,
    version: headerValue(inbound.headers, "anthropic-version") ?? ANTHROPIC_VERSION,
    beta: headerValue(inbound.headers, "anthropic-beta"),
  };
  const estimate = { inputTokens: promptTokensEstimate(promptChars), outputTokens: maxTokens(json.max_tokens) ?? DEFAULT_RESERVED_OUTPUT_TOKENS };
  return { model: typeof model === "string" ? model : null, stream: json.stream === true, state, estimate };
}

/**
 * SSE: message_start carries input usage, message_delta the cumulative output; only lines holding a
 * usage object are parsed. The first token is the first content_block_delta. Cut off before
 * message_delta, the output is the number of content deltas seen.
 */
function sseMeter(state: MessagesState): Meter {
  const units: Units = {};
  let deltas = 0;
  let sawOutput = false;
  return sseDataMeter(
    (line) => {
      if (line.includes('"content_block_delta"')) {
        deltas++;
        return true;
      }
      if (!line.includes('"usage"')) return false;
      try {
        const ev = JSON.parse(line.slice(5)) as { type?: string; message?: { usage?: unknown }; usage?: unknown };
        if (ev.type === "message_start") anthropicUsageUnits(ev.message?.usage, units);
        else if (ev.type === "message_delta") {
          anthropicUsageUnits(ev.usage, units);
          sawOutput = true;
        }
      } catch {
        // the upstream's malformed line: the estimate stands
      }
      return false;
    },
    () => {
      const out = { ...units };
      if (!sawOutput) out.outputTokens = deltas;
      out.inputTokens ??= promptTokensEstimate(state.promptChars);
      return out;
    },
  );
}

const anthropicAuth = (t: UpstreamTarget): Record<string, string> => ({ "x-api-key": t.apiKey });

const messagesRoute = llmJsonRoute({
  path: "/messages",
  parse: parseMessages,
  headers(call, target) {
    const state = call.state as MessagesState;
    const headers: Record<string, string> = { "anthropic-version": state.version, ...anthropicAuth(target) };
    if (state.beta) headers["anthropic-beta"] = state.beta;
    return headers;
  },
  sseMeter: (call) => sseMeter(call.state as MessagesState),
  // JSON answer: its usage read at the end.
  jsonUsage: (body) => anthropicUsageUnits(parsedField(body, "usage")),
});

/** /anthropic/v1: Anthropic's Messages API (the SDK's baseURL is the host root + /anthropic). */
export const anthropicProtocol: VendorProtocol = {
  id: "anthropic",
  prefix: "/anthropic/v1",
  providerTypes: ["anthropic"],
  credential: (headers) => headerValue(headers, "x-api-key") ?? authorizationToken(headers),
  upstreamAuth: anthropicAuth,
  errorBody(_status, code, message, details) {
    return {
      contentType: "application/json",
      body: JSON.stringify({ type: "error", error: { type: ERROR_TYPES[code], message, code, ...(details !== undefined && { details }) } }),
    };
  },
  routes: [messagesRoute],
};
