import { type StubHandler, type StubStep, StubServer, writeEvents } from "./stub-server.js";

/** The usage every answer of the stub reports: the truth unit tests compare records against. */
export interface ChatUsage {
  prompt_tokens: number;
  completion_tokens: number;
  cached_tokens: number;
}

export const DEFAULT_CHAT_USAGE: ChatUsage = { prompt_tokens: 12, completion_tokens: 5, cached_tokens: 4 };

/** The content the stub streams, one delta per piece. */
export const STREAM_PIECES = ["Hel", "lo", " the", "re", "!"];

/**
 * A stub OpenAI chat-completions server (POST /v1/chat/completions, JSON and SSE with the usage
 * chunk when stream_options.include_usage is true), scriptable through StubServer.
 */
export function openaiChatStub(usage: ChatUsage = DEFAULT_CHAT_USAGE): StubServer {
  return new StubServer(openaiChatHandler(usage));
}

/** The chat stub's handler, for stubs that serve chat completions beside other routes. */
export function openaiChatHandler(usage: ChatUsage = DEFAULT_CHAT_USAGE): StubHandler {
  return async (req, res, hit, step: StubStep) => {
    if (!(req.method === "POST" && (req.url ?? "").endsWith("/chat/completions"))) {
      res.writeHead(404, { "content-type": "application/json" }).end('{"error":{"message":"not found"}}');
      return;
    }
    if (step.status && step.status >= 400) {
      const headers: Record<string, string> = { "content-type": "application/json" };
      if (step.retryAfter) headers["retry-after"] = step.retryAfter;
      res.writeHead(step.status, headers).end(JSON.stringify({ error: { message: `stub status ${step.status}`, type: "server_error", code: null } }));
      return;
    }
    let body: { model?: string; stream?: boolean; stream_options?: { include_usage?: boolean } };
    try {
      body = JSON.parse(hit.body);
    } catch {
      res.writeHead(400, { "content-type": "application/json" }).end('{"error":{"message":"bad json"}}');
      return;
    }
    const usageBlock = { prompt_tokens: usage.prompt_tokens, completion_tokens: usage.completion_tokens, total_tokens: usage.prompt_tokens + usage.completion_tokens, prompt_tokens_details: { cached_tokens: usage.cached_tokens } };
    const id = "chatcmpl-stub";
    if (!body.stream) {
      const answer = JSON.stringify({
        id,
        object: "chat.completion",
        created: 1,
        model: body.model,
        choices: [{ index: 0, message: { role: "assistant", content: STREAM_PIECES.join("") }, finish_reason: "stop" }],
        usage: usageBlock,
      });
      res.writeHead(200, { "content-type": "application/json", "content-length": String(Buffer.byteLength(answer)) }).end(answer);
      return;
    }
    const chunk = (delta: object, finish: string | null = null) =>
      `data: ${JSON.stringify({ id, object: "chat.completion.chunk", created: 1, model: body.model, choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
    const events = [chunk({ role: "assistant", content: "" }), ...STREAM_PIECES.map((p) => chunk({ content: p })), chunk({}, "stop")];
    if (body.stream_options?.include_usage) {
      events.push(`data: ${JSON.stringify({ id, object: "chat.completion.chunk", created: 1, model: body.model, choices: [], usage: usageBlock })}\n\n`);
    }
    events.push("data: [DONE]\n\n");
    res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
    await writeEvents(res, events, step);
  };
}
