import { type InboundRequest, type ParsedCall, ProtocolInputError, type ProxyRoute, type UpstreamTarget, type Units } from "../protocol.js";
import { DEFAULT_RESERVED_OUTPUT_TOKENS, promptTokensEstimate } from "../budget-reservations.js";
import { jsonObjectBody, maxTokens, parsedField, llmJsonRoute } from "./json-body.js";
import { usageFromSlice } from "./openai-chat.js";
import { sseTokenMeter, type TokenStream } from "./sse.js";

/**
 * POST /responses: OpenAI's Responses API (the default of the Vercel AI SDK's `openai(model)` and of
 * LangChain's `useResponsesApi`). Routed exactly as chat completions; only the body's model is
 * rewritten, every other field (tools, previous_response_id, …) passes through untouched.
 */

interface ResponsesState {
  json: Record<string, unknown>;
  /** Characters of the input text: the input estimate when a stream is cut before response.completed. */
  promptChars: number;
}

/** Characters of the text in a Responses `input`: a string, or items whose content is a string or text parts. */
export function responsesInputChars(input: unknown): number {
  if (typeof input === "string") return input.length;
  if (!Array.isArray(input)) return 0;
  let n = 0;
  for (const item of input) {
    const content = (item as { content?: unknown } | null)?.content;
    if (typeof content === "string") n += content.length;
    else if (Array.isArray(content)) {
      for (const part of content) {
        const text = (part as { text?: unknown } | null)?.text;
        if (typeof text === "string") n += text.length;
      }
    }
  }
  return n;
}

function parseResponses(inbound: InboundRequest): ParsedCall {
  const json = jsonObjectBody(inbound.body);
  const model = json.model;
  if (model !== undefined && model !== null && typeof model !== "string") throw new ProtocolInputError("model must be a string");
  const instructions = typeof json.instructions === "string" ? json.instructions.length : 0;
  const state: ResponsesState = { json, promptChars: responsesInputChars(json.input) + instructions };
  // What a block budget reserves: the input's characters / 4 and max_output_tokens (else the default).
  const estimate = { inputTokens: promptTokensEstimate(state.promptChars), outputTokens: maxTokens(json.max_output_tokens) ?? DEFAULT_RESERVED_OUTPUT_TOKENS };
  return { model: typeof model === "string" ? model : null, stream: json.stream === true, state, estimate };
}

/**
 * Responses usage → units: input (cached included, as OpenAI counts it), output (reasoning included,
 * as OpenAI bills it), cached input, and the reasoning part of the output kept apart.
 */
export function responsesUsageUnits(usage: unknown): Units | null {
  if (!usage || typeof usage !== "object") return null;
  const u = usage as {
    input_tokens?: unknown;
    output_tokens?: unknown;
    input_tokens_details?: { cached_tokens?: unknown } | null;
    output_tokens_details?: { reasoning_tokens?: unknown } | null;
  };
  const n = (v: unknown) => (typeof v === "number" && Number.isSafeInteger(v) && v >= 0 ? v : undefined);
  const out: Units = { inputTokens: n(u.input_tokens) ?? 0, outputTokens: n(u.output_tokens) ?? 0 };
  const cached = n(u.input_tokens_details?.cached_tokens);
  if (cached !== undefined) out.cachedInputTokens = cached;
  const reasoning = n(u.output_tokens_details?.reasoning_tokens);
  if (reasoning !== undefined) out.reasoningTokens = reasoning;
  return out;
}

/** JSON answer: the response object's usage (written after its output), read at the end. */
const jsonUsage = (body: Buffer): Units => {
  const sliced = usageFromSlice(body);
  return responsesUsageUnits(sliced !== undefined && sliced !== null ? sliced : parsedField(body, "usage")) ?? {};
};

/** The terminal events whose `response` carries the final usage. */
const TERMINAL = /"type":"response\.(?:completed|incomplete|failed)"/;
/** Deltas of generated output: text, refusal, tool-call arguments. */
const OUTPUT_DELTA = /"type":"response\.(?:output_text|refusal|function_call_arguments|custom_tool_call_input)\.delta"/;

/**
 * SSE answer: only the terminal event (response.completed, or incomplete/failed) is parsed, for its
 * response.usage. The first token is the first output delta. Cut off before the terminal event, the
 * output is the number of deltas seen (one token each) and the input the input's characters / 4, as
 * for chat streams.
 */
const RESPONSES_STREAM: TokenStream = {
  isDelta: (line) => OUTPUT_DELTA.test(line),
  carriesUsage: (line) => TERMINAL.test(line),
  usage: (event) => responsesUsageUnits((event as { response?: { usage?: unknown } }).response?.usage),
};

export function responsesRoute(auth: (t: UpstreamTarget) => Record<string, string>): ProxyRoute {
  return llmJsonRoute({
    path: "/responses",
    parse: parseResponses,
    headers: (_call, target) => auth(target),
    sseMeter: (call) => sseTokenMeter(RESPONSES_STREAM, (call.state as ResponsesState).promptChars),
    jsonUsage,
  });
}
