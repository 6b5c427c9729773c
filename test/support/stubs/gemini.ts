import { STREAM_PIECES } from "./openai-chat.js";
import { type StubStep, StubServer, writeEvents } from "./stub-server.js";

/** The usage the stub reports (the last stream chunk carries the totals, as Gemini's do). */
export const GEMINI_USAGE = { promptTokenCount: 11, candidatesTokenCount: 5, thoughtsTokenCount: 3, cachedContentTokenCount: 4, totalTokenCount: 19 };

/**
 * A stub Gemini API (generativelanguage): POST /{v1,v1beta}/models/{model}:generateContent (JSON) and
 * :streamGenerateContent?alt=sse (one GenerateContentResponse per `data:` line). Errors in Google's
 * shape `{error: {code, message, status}}`.
 */
export function geminiStub(): StubServer {
  return new StubServer(async (req, res, hit, step: StubStep) => {
    const m = /^\/(v1|v1beta)\/models\/([^/:?]+):(generateContent|streamGenerateContent)(\?.*)?$/.exec(req.url ?? "");
    const fail = (code: number, message: string, status: string) =>
      res.writeHead(code, { "content-type": "application/json" }).end(JSON.stringify({ error: { code, message, status } }));
    if (req.method !== "POST" || !m) return void fail(404, `no route ${req.url}`, "NOT_FOUND");
    if (step.status && step.status >= 400) return void fail(step.status, `stub status ${step.status}`, "UNAVAILABLE");
    const model = m[2];
    const candidate = (text: string, finish?: string) => ({ content: { parts: [{ text }], role: "model" }, index: 0, ...(finish && { finishReason: finish }) });
    if (m[3] === "generateContent") {
      const answer = JSON.stringify({ candidates: [candidate(STREAM_PIECES.join(""), "STOP")], usageMetadata: GEMINI_USAGE, modelVersion: model, responseId: "resp-1" });
      res.writeHead(200, { "content-type": "application/json" }).end(answer);
      return;
    }
    const events = STREAM_PIECES.map((p, i) => {
      const last = i === STREAM_PIECES.length - 1;
      const usage = last ? GEMINI_USAGE : { promptTokenCount: GEMINI_USAGE.promptTokenCount, totalTokenCount: GEMINI_USAGE.promptTokenCount };
      return `data: ${JSON.stringify({ candidates: [candidate(p, last ? "STOP" : undefined)], usageMetadata: usage, modelVersion: model, responseId: "resp-1" })}\r\n\r\n`;
    });
    void hit;
    res.writeHead(200, { "content-type": "text/event-stream" });
    await writeEvents(res, events, step);
  });
}
