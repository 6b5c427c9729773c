import { openaiChatHandler, STREAM_PIECES } from "./openai-chat.js";
import { type StubStep, StubServer, writeEvents } from "./stub-server.js";

/** The usage every Responses answer of the stub reports (reasoning is part of output, as OpenAI counts it). */
export const DEFAULT_RESPONSES_USAGE = { input_tokens: 20, cached_tokens: 8, output_tokens: 9, reasoning_tokens: 3 };

/**
 * A stub OpenAI Responses server (POST /v1/responses): the response object as JSON, or with
 * `stream: true` the documented event sequence (response.created … output_text.delta … response.completed
 * with the usage). POST /v1/chat/completions is the chat stub's. Scriptable through StubServer.
 */
export function openaiResponsesStub(usage = DEFAULT_RESPONSES_USAGE): StubServer {
  const chat = openaiChatHandler();
  return new StubServer(async (req, res, hit, step: StubStep) => {
    if (req.method === "POST" && (req.url ?? "").endsWith("/chat/completions")) return chat(req, res, hit, step);
    if (!(req.method === "POST" && (req.url ?? "").endsWith("/responses"))) {
      res.writeHead(404, { "content-type": "application/json" }).end('{"error":{"message":"not found","type":"invalid_request_error","code":null}}');
      return;
    }
    if (step.status && step.status >= 400) {
      const headers: Record<string, string> = { "content-type": "application/json" };
      if (step.retryAfter) headers["retry-after"] = step.retryAfter;
      res.writeHead(step.status, headers).end(JSON.stringify({ error: { message: `stub status ${step.status}`, type: "server_error", code: null } }));
      return;
    }
    let body: { model?: string; stream?: boolean };
    try {
      body = JSON.parse(hit.body);
    } catch {
      res.writeHead(400, { "content-type": "application/json" }).end('{"error":{"message":"bad json"}}');
      return;
    }
    const text = STREAM_PIECES.join("");
    const usageBlock = {
      input_tokens: usage.input_tokens,
      input_tokens_details: { cached_tokens: usage.cached_tokens },
      output_tokens: usage.output_tokens,
      output_tokens_details: { reasoning_tokens: usage.reasoning_tokens },
      total_tokens: usage.input_tokens + usage.output_tokens,
    };
    const message = (status: string, content: object[]) => ({ id: "msg_stub", type: "message", status, role: "assistant", content });
    const part = { type: "output_text", text, annotations: [], logprobs: [] };
    const response = (status: string, output: object[], u: object | null) => ({
      id: "resp_stub",
      object: "response",
      created_at: 1_700_000_000,
      status,
      error: null,
      incomplete_details: null,
      instructions: null,
      model: body.model,
      output,
      parallel_tool_calls: true,
      previous_response_id: null,
      temperature: 1,
      text: { format: { type: "text" } },
      tool_choice: "auto",
      tools: [],
      top_p: 1,
      usage: u,
      user: null,
      metadata: {},
    });
    if (!body.stream) {
      const answer = JSON.stringify(response("completed", [message("completed", [part])], usageBlock));
      res.writeHead(200, { "content-type": "application/json", "content-length": String(Buffer.byteLength(answer)) }).end(answer);
      return;
    }
    let seq = 0;
    const ev = (type: string, data: object) => `event: ${type}\ndata: ${JSON.stringify({ type, sequence_number: seq++, ...data })}\n\n`;
    const ids = { item_id: "msg_stub", output_index: 0, content_index: 0 };
    const events = [
      ev("response.created", { response: response("in_progress", [], null) }),
      ev("response.in_progress", { response: response("in_progress", [], null) }),
      ev("response.output_item.added", { output_index: 0, item: message("in_progress", []) }),
      ev("response.content_part.added", { ...ids, part: { type: "output_text", text: "", annotations: [] } }),
      ...STREAM_PIECES.map((delta) => ev("response.output_text.delta", { ...ids, delta, logprobs: [] })),
      ev("response.output_text.done", { ...ids, text, logprobs: [] }),
      ev("response.content_part.done", { ...ids, part }),
      ev("response.output_item.done", { output_index: 0, item: message("completed", [part]) }),
      ev("response.completed", { response: response("completed", [message("completed", [part])], usageBlock) }),
    ];
    res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
    await writeEvents(res, events, step);
  });
}
