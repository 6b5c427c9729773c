import { type StubStep, StubServer, writeEvents } from "./stub-server.js";

/** The usage every answer of the stub reports (Anthropic's fields: input excludes cache reads). */
export const ANTHROPIC_USAGE = { input_tokens: 9, output_tokens: 6, cache_read_input_tokens: 3, cache_creation_input_tokens: 0 };
export const ANTHROPIC_PIECES = ["Hel", "lo", " from", " Claude", "."];

/** A stub Anthropic Messages server (POST /v1/messages, JSON and SSE), scriptable through StubServer. */
export function anthropicStub(): StubServer {
  return new StubServer(async (req, res, hit, step: StubStep) => {
    if (!(req.method === "POST" && (req.url ?? "").endsWith("/messages"))) {
      res.writeHead(404, { "content-type": "application/json" }).end('{"type":"error","error":{"type":"not_found_error","message":"not found"}}');
      return;
    }
    if (step.status && step.status >= 400) {
      const headers: Record<string, string> = { "content-type": "application/json" };
      if (step.retryAfter) headers["retry-after"] = step.retryAfter;
      res.writeHead(step.status, headers).end(JSON.stringify({ type: "error", error: { type: "overloaded_error", message: `stub status ${step.status}` } }));
      return;
    }
    let body: { model?: string; stream?: boolean };
    try {
      body = JSON.parse(hit.body);
    } catch {
      res.writeHead(400, { "content-type": "application/json" }).end('{"type":"error","error":{"type":"invalid_request_error","message":"bad json"}}');
      return;
    }
    const message = { id: "msg_stub", type: "message", role: "assistant", model: body.model, stop_reason: null, stop_sequence: null };
    if (!body.stream) {
      const answer = JSON.stringify({ ...message, stop_reason: "end_turn", content: [{ type: "text", text: ANTHROPIC_PIECES.join("") }], usage: ANTHROPIC_USAGE });
      res.writeHead(200, { "content-type": "application/json" }).end(answer);
      return;
    }
    const ev = (type: string, data: object) => `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;
    const { output_tokens, ...inputUsage } = ANTHROPIC_USAGE;
    const events = [
      ev("message_start", { message: { ...message, content: [], usage: { ...inputUsage, output_tokens: 1 } } }),
      ev("content_block_start", { index: 0, content_block: { type: "text", text: "" } }),
      ...ANTHROPIC_PIECES.map((text) => ev("content_block_delta", { index: 0, delta: { type: "text_delta", text } })),
      ev("content_block_stop", { index: 0 }),
      ev("message_delta", { delta: { stop_reason: "end_turn", stop_sequence: null }, usage: { output_tokens } }),
      ev("message_stop", {}),
    ];
    res.writeHead(200, { "content-type": "text/event-stream" });
    await writeEvents(res, events, step);
  });
}
