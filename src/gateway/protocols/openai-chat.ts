import { type InboundRequest, type ParsedCall, ProtocolInputError, type ProxyRoute, type UpstreamTarget, type Units } from "../protocol.js";
import { DEFAULT_RESERVED_OUTPUT_TOKENS, promptTokensEstimate } from "../budget-reservations.js";
import { contentChars, jsonObjectBody, maxTokens, parsedField, valueAfterKey, llmJsonRoute } from "./json-body.js";
import { sseTokenMeter, type TokenStream } from "./sse.js";

/** What parse keeps for the upstream request and the meter of a chat completion. */
interface ChatState {
  json: Record<string, unknown>;
  /** stream_options.include_usage must be added (the client did not ask for the usage block). */
  injectUsage: boolean;
  /** Characters of the prompt: the estimate of input tokens when a stream is cut before its usage block. */
  promptChars: number;
}

function parseChat(inbound: InboundRequest): ParsedCall {
  const json = jsonObjectBody(inbound.body);
  const model = json.model;
  if (model !== undefined && model !== null && typeof model !== "string") throw new ProtocolInputError("model must be a string");
  if (!Array.isArray(json.messages)) throw new ProtocolInputError("messages must be an array", 400);
  const stream = json.stream === true;
  const opts = json.stream_options;
  if (opts !== undefined && opts !== null && (typeof opts !== "object" || Array.isArray(opts))) throw new ProtocolInputError("stream_options must be an object");
  const injectUsage = stream && (opts as { include_usage?: unknown } | null | undefined)?.include_usage !== true;
  let promptChars = 0;
  for (const m of json.messages as unknown[]) promptChars += contentChars((m as { content?: unknown } | null)?.content);
  const state: ChatState = { json, injectUsage, promptChars };
  const estimate = { inputTokens: promptTokensEstimate(promptChars), outputTokens: maxTokens(json.max_completion_tokens) ?? maxTokens(json.max_tokens) ?? DEFAULT_RESERVED_OUTPUT_TOKENS };
  return { model: typeof model === "string" ? model : null, stream, state, estimate };
}

/** Usage is counted from the wire: a stream without include_usage would carry none. */
function usageRequested(call: ParsedCall): Record<string, unknown> | undefined {
  const state = call.state as ChatState;
  return state.injectUsage ? { stream_options: { ...(state.json.stream_options as object | undefined), include_usage: true } } : undefined;
}

/** OpenAI usage block → units (prompt, completion, cached prompt tokens). */
export function openaiUsageUnits(usage: unknown): Units | null {
  if (!usage || typeof usage !== "object") return null;
  const u = usage as { prompt_tokens?: unknown; completion_tokens?: unknown; prompt_tokens_details?: { cached_tokens?: unknown } | null };
  const n = (v: unknown) => (typeof v === "number" && Number.isSafeInteger(v) && v >= 0 ? v : undefined);
  const out: Units = { inputTokens: n(u.prompt_tokens) ?? 0, outputTokens: n(u.completion_tokens) ?? 0 };
  const cached = n(u.prompt_tokens_details?.cached_tokens);
  if (cached !== undefined) out.cachedInputTokens = cached;
  return out;
}

const USAGE_KEY = Buffer.from('"usage"');

/**
 * The usage object of a JSON answer, parsed from a slice of the body: from the last `"usage"` key to
 * its matching brace (OpenAI writes usage last, after the content). The bytes `"usage"` followed by
 * `:` can only be a key — inside a JSON string both quotes would be escaped. undefined when no such
 * slice parses (the caller then parses the whole answer).
 */
export function usageFromSlice(body: Buffer): unknown {
  const at = body.lastIndexOf(USAGE_KEY);
  if (at < 0) return undefined;
  let i = valueAfterKey(body, at + USAGE_KEY.length);
  if (i < 0) return undefined;
  if (body[i] !== 0x7b) return undefined; // '{'
  const start = i;
  let depth = 0;
  let inString = false;
  for (; i < body.length; i++) {
    const b = body[i];
    if (inString) {
      if (b === 0x5c) i++; // backslash: skip the escaped byte
      else if (b === 0x22) inString = false;
    } else if (b === 0x22) inString = true;
    else if (b === 0x7b) depth++;
    else if (b === 0x7d && --depth === 0) {
      try {
        return JSON.parse(body.toString("utf8", start, i + 1));
      } catch {
        return undefined;
      }
    }
  }
  return undefined;
}

/** JSON answer: its usage block read at the end, from a slice when it can be (no parse of the content). */
const jsonUsage = (body: Buffer): Units => {
  const sliced = usageFromSlice(body);
  return openaiUsageUnits(sliced !== undefined ? sliced : parsedField(body, "usage")) ?? {};
};

const USAGE_MARK = '"usage":{';

/**
 * SSE answer: lines are scanned, not parsed; only the line carrying a usage object is parsed. The
 * first token is the first delta with content or a tool call. Cut off before the usage block, the
 * output is the number of content deltas (one token each) and the input the prompt's characters / 4.
 */
const CHAT_STREAM: TokenStream = {
  isDelta: (line) => /"content":"[^"]|"tool_calls":\[/.test(line),
  carriesUsage: (line) => line.includes(USAGE_MARK),
  usage: (event) => openaiUsageUnits((event as { usage?: unknown }).usage),
};

/** POST /chat/completions, JSON and SSE. */
export function chatCompletionsRoute(auth: (t: UpstreamTarget) => Record<string, string>): ProxyRoute {
  return llmJsonRoute({
    path: "/chat/completions",
    parse: parseChat,
    headers: (_call, target) => auth(target),
    add: usageRequested,
    sseMeter: (call) => sseTokenMeter(CHAT_STREAM, (call.state as ChatState).promptChars),
    jsonUsage,
  });
}
