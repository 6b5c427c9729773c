import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { useTestApp } from "../support/app.js";
import { DEFAULT_CHAT_USAGE, openaiChatStub, STREAM_PIECES } from "../support/stubs/openai-chat.js";
import type { StubServer } from "../support/stubs/stub-server.js";
import { openaiChatYaml, OPERATOR_KEY, recordedRows } from "./support.js";

let stub: StubServer;

beforeAll(async () => {
  stub = await openaiChatStub().start();
});
afterAll(async () => {
  await stub?.close();
});
const app = useTestApp(() => ({
  listen: true,
  yaml: openaiChatYaml(stub.url),
}));

const client = () => new OpenAI({ apiKey: OPERATOR_KEY, baseURL: `${app.base}/openai/v1`, maxRetries: 0 });
const until = async (cond: () => boolean | Promise<boolean>) => {
  for (let i = 0; i < 200 && !(await cond()); i++) await new Promise((r) => setTimeout(r, 25));
};

describe("OpenAI chat streams (SSE) through Voxgate", () => {
  it("asks the upstream for the usage block, relays the stream, records exact units and TTFB from the stub's delay", async () => {
    stub.script({ delayMs: 120 });
    const before = stub.hits.length;
    const { data: stream, response } = await client()
      .chat.completions.create({ model: "openai/gpt-4.1-mini", stream: true, messages: [{ role: "user", content: "hi" }] })
      .withResponse();
    let text = "";
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? "";
    expect(text).toBe(STREAM_PIECES.join(""));
    expect(JSON.parse(stub.hits[before]?.body ?? "{}").stream_options).toEqual({ include_usage: true });
    const id = response.headers.get("x-voxgate-request-id");
    const row = (await recordedRows(app)).find((r) => r.id === id);
    expect(row).toMatchObject({ status: "success", input_tokens: 12, output_tokens: 5, cached_input_tokens: 4 });
    expect(row?.ttfb_ms).toBeGreaterThanOrEqual(120);
    expect(row?.total_latency_ms).toBeGreaterThanOrEqual(row?.ttfb_ms ?? 0);
  });

  it("keeps a client's own stream_options and usage request", async () => {
    const before = stub.hits.length;
    const stream = await client().chat.completions.create({
      model: "openai/gpt-4.1-mini",
      stream: true,
      stream_options: { include_usage: true },
      messages: [{ role: "user", content: "hi" }],
    });
    let usage: unknown = null;
    for await (const chunk of stream) if (chunk.usage) usage = chunk.usage;
    expect(usage).toMatchObject({ prompt_tokens: DEFAULT_CHAT_USAGE.prompt_tokens });
    expect(JSON.parse(stub.hits[before]?.body ?? "{}").stream_options).toEqual({ include_usage: true });
  });

  it("aborts the upstream when the client disconnects and records the partial usage", async () => {
    stub.script({ eventGapMs: 150 });
    const abortedBefore = stub.abortedAnswers;
    const ac = new AbortController();
    const res = await fetch(`${app.base}/openai/v1/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${OPERATOR_KEY}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "openai/gpt-4.1-mini", stream: true, messages: [{ role: "user", content: "12345678" }] }),
      signal: ac.signal,
    });
    const id = res.headers.get("x-voxgate-request-id");
    const reader = res.body?.getReader();
    let seen = "";
    while (!seen.includes('"content":"Hel"')) {
      const r = await reader?.read();
      if (!r || r.done) break;
      seen += new TextDecoder().decode(r.value);
    }
    ac.abort();
    await until(() => stub.abortedAnswers > abortedBefore);
    expect(stub.abortedAnswers).toBe(abortedBefore + 1);
    let row: Awaited<ReturnType<typeof recordedRows>>[number] | undefined;
    await until(async () => {
      row = (await recordedRows(app)).find((r) => r.id === id);
      return row !== undefined;
    });
    expect(row).toMatchObject({ status: "error", error_message: "client disconnected before the answer ended" });
    // Partial: content deltas seen (one token each) and the prompt estimated at 4 characters a token.
    expect(row?.output_tokens).toBeGreaterThanOrEqual(1);
    expect(row?.output_tokens).toBeLessThan(STREAM_PIECES.length);
    expect(row?.input_tokens).toBe(2);
  });

  it("records an upstream that drops mid-stream as an error with the partial usage", async () => {
    stub.script({ dropAfterEvents: 3 });
    const res = await fetch(`${app.base}/openai/v1/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${OPERATOR_KEY}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "openai/gpt-4.1-mini", stream: true, messages: [{ role: "user", content: "hi" }] }),
    });
    expect(res.status).toBe(200);
    const id = res.headers.get("x-voxgate-request-id");
    await res.text().catch(() => "cut");
    const row = (await recordedRows(app)).find((r) => r.id === id);
    expect(row).toMatchObject({ status: "error", error_message: "upstream answer cut off", output_tokens: 2 });
  });
});
