import { createOpenAI } from "@ai-sdk/openai";
import { ChatOpenAI } from "@langchain/openai";
import { generateText, streamText } from "ai";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { useTestApp } from "../support/app.js";
import { DEFAULT_CHAT_USAGE, STREAM_PIECES } from "../support/stubs/openai-chat.js";
import { DEFAULT_RESPONSES_USAGE, openaiResponsesStub } from "../support/stubs/openai-responses.js";
import type { StubServer } from "../support/stubs/stub-server.js";
import { KEYS_YAML, OPERATOR_KEY, PROVIDER_KEY, recordedRows } from "./support.js";

let stub: StubServer;
let backup: StubServer;
const BACKUP_KEY = "gsk-backup-provider-key-0123456789";

beforeAll(async () => {
  stub = await openaiResponsesStub().start();
  backup = await openaiResponsesStub().start();
});
afterAll(async () => {
  await stub?.close();
  await backup?.close();
});
const app = useTestApp(() => ({
  listen: true,
  yaml: `${KEYS_YAML}
providers:
  openai: { api_key: "${PROVIDER_KEY}", base_url: "${stub.url}/v1" }
  groq: { api_key: "${BACKUP_KEY}", base_url: "${backup.url}/v1" }
models:
  llm:
    openai/gpt-4.1-mini: { provider: openai, model: gpt-4.1-mini }
    groq/llama-3.3-70b-versatile: { provider: groq, model: llama-3.3-70b-versatile }
fallbacks:
  llm: [openai/gpt-4.1-mini, groq/llama-3.3-70b-versatile]
stacks:
  fast: { llm: openai/gpt-4.1-mini }
projects:
  support: { default_stack: fast }
`,
}));

const U = DEFAULT_RESPONSES_USAGE;
// ((20 - 8) uncached × 0.4 + 8 cached × 0.1 + 9 out × 1.6) / 1e6: catalog list prices of openai/gpt-4.1-mini.
const EXPECTED_COST = "0.0000200000";
const EXPECTED_PRICE = "0.0000250000"; // × default_markup 1.25
const TEXT = STREAM_PIECES.join("");

const base = () => `${app.base}/openai/v1`;

/** The stub hits since `from`: each got the provider key, never a Voxgate key, and the vendor's model name. */
function expectProviderKeyOnly(from: number, path = "/v1/responses") {
  const hits = stub.hits.slice(from);
  expect(hits.length).toBeGreaterThan(0);
  for (const hit of hits) {
    expect(hit.path).toBe(path);
    expect(hit.headers.authorization).toBe(`Bearer ${PROVIDER_KEY}`);
    expect(JSON.stringify(hit.headers)).not.toContain(OPERATOR_KEY);
    expect(hit.body).not.toContain(OPERATOR_KEY);
    expect(JSON.parse(hit.body).model).toBe("gpt-4.1-mini");
  }
}

async function rowOf(requestId: string | null) {
  const row = (await recordedRows(app)).find((r) => r.id === requestId);
  expect(row).toBeDefined();
  return row;
}

async function latestRow() {
  const rows = await recordedRows(app);
  return rows[rows.length - 1];
}

const exactRow = {
  model_id: "openai/gpt-4.1-mini",
  status: "success",
  input_tokens: U.input_tokens,
  output_tokens: U.output_tokens,
  cached_input_tokens: U.cached_tokens,
  cost_usd: EXPECTED_COST,
  rated_price_usd: EXPECTED_PRICE,
};

describe("OpenAI Responses API through Voxgate", () => {
  it("openai SDK responses.create (JSON): provider key upstream, units from response.usage, reasoning kept, rated", async () => {
    const from = stub.hits.length;
    const client = new OpenAI({ apiKey: OPERATOR_KEY, baseURL: base(), maxRetries: 0, defaultHeaders: { "X-Voxgate-Project": "support" } });
    const res = await client.responses
      .create({ model: "gpt-4.1-mini", input: "hi", tools: [{ type: "function", name: "f", parameters: {}, strict: false }], previous_response_id: "resp_prev" })
      .withResponse();
    expect(res.data.output_text).toBe(TEXT);
    expectProviderKeyOnly(from);
    // Every other field passes through untouched.
    const sent = JSON.parse(stub.hits[from]?.body ?? "{}");
    expect(sent.previous_response_id).toBe("resp_prev");
    expect(sent.tools[0].name).toBe("f");
    const row = await rowOf(res.response.headers.get("x-voxgate-request-id"));
    expect(row).toMatchObject({ ...exactRow, project: "support" });
    expect(row?.metadata).toMatchObject({ reasoning_tokens: U.reasoning_tokens });
  });

  it("openai SDK responses.create stream: units from response.completed, TTFB at the first delta", async () => {
    const from = stub.hits.length;
    const client = new OpenAI({ apiKey: OPERATOR_KEY, baseURL: base(), maxRetries: 0 });
    const { data: stream, response } = await client.responses.create({ model: "openai/gpt-4.1-mini", input: [{ role: "user", content: "hi" }], stream: true }).withResponse();
    let text = "";
    let completed = false;
    for await (const ev of stream) {
      if (ev.type === "response.output_text.delta") text += ev.delta;
      if (ev.type === "response.completed") completed = true;
    }
    expect(text).toBe(TEXT);
    expect(completed).toBe(true);
    expectProviderKeyOnly(from);
    const row = await rowOf(response.headers.get("x-voxgate-request-id"));
    expect(row).toMatchObject(exactRow);
    expect(row?.ttfb_ms).toBeGreaterThanOrEqual(0);
  });

  it("Vercel AI SDK: generateText and streamText with the default openai(model) factory (Responses)", async () => {
    const from = stub.hits.length;
    const openai = createOpenAI({ apiKey: OPERATOR_KEY, baseURL: base() });
    const g = await generateText({ model: openai("gpt-4.1-mini"), prompt: "hi", maxRetries: 0 });
    expect(g.text).toBe(TEXT);
    expect(g.usage.inputTokens).toBe(U.input_tokens);
    expect(await latestRow()).toMatchObject(exactRow);

    const s = streamText({ model: openai("gpt-4.1-mini"), prompt: "hi", maxRetries: 0 });
    let text = "";
    for await (const piece of s.textStream) text += piece;
    expect(text).toBe(TEXT);
    expect((await s.usage).outputTokens).toBe(U.output_tokens);
    expectProviderKeyOnly(from);
    expect(stub.hits.length - from).toBe(2);
    expect(await latestRow()).toMatchObject(exactRow);
  });

  it("LangChain ChatOpenAI with useResponsesApi goes to /responses, without it to /chat/completions", async () => {
    const from = stub.hits.length;
    const withResponses = new ChatOpenAI({ model: "gpt-4.1-mini", apiKey: OPERATOR_KEY, configuration: { baseURL: base() }, useResponsesApi: true, maxRetries: 0 });
    const a = await withResponses.invoke("hi");
    expect(a.text).toBe(TEXT);
    expectProviderKeyOnly(from);
    expect(await latestRow()).toMatchObject(exactRow);

    const chatFrom = stub.hits.length;
    const plain = new ChatOpenAI({ model: "gpt-4.1-mini", apiKey: OPERATOR_KEY, configuration: { baseURL: base() }, maxRetries: 0 });
    const b = await plain.invoke("hi");
    expect(b.text).toBe(TEXT);
    expectProviderKeyOnly(chatFrom, "/v1/chat/completions");
    expect(await latestRow()).toMatchObject({
      model_id: "openai/gpt-4.1-mini",
      status: "success",
      input_tokens: DEFAULT_CHAT_USAGE.prompt_tokens,
      output_tokens: DEFAULT_CHAT_USAGE.completion_tokens,
    });
  });

  it("no model: the project's default_stack; an unknown model: 404 model_not_found in OpenAI's shape", async () => {
    const res = await fetch(`${app.base}/p/support/s/s-1/openai/v1/responses`, {
      method: "POST",
      headers: { authorization: `Bearer ${OPERATOR_KEY}`, "content-type": "application/json" },
      body: JSON.stringify({ input: "hi" }),
    });
    expect(res.status).toBe(200);
    expect((await rowOf(res.headers.get("x-voxgate-request-id")))?.model_id).toBe("openai/gpt-4.1-mini");
    const client = new OpenAI({ apiKey: OPERATOR_KEY, baseURL: base(), maxRetries: 0 });
    const err = await client.responses.create({ model: "nope-1", input: "hi" }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.NotFoundError);
    expect((err as InstanceType<typeof OpenAI.NotFoundError>).code).toBe("model_not_found");
  });

  it("falls back before the first byte: a 503 from openai is answered by the groq provider with its own key", async () => {
    stub.script({ status: 503 });
    const from = backup.hits.length;
    const client = new OpenAI({ apiKey: OPERATOR_KEY, baseURL: base(), maxRetries: 0 });
    const res = await client.responses.create({ model: "openai/gpt-4.1-mini", input: "hi", stream: true }).withResponse();
    let text = "";
    for await (const ev of res.data) if (ev.type === "response.output_text.delta") text += ev.delta;
    expect(text).toBe(TEXT);
    const hit = backup.hits[from];
    expect(hit?.headers.authorization).toBe(`Bearer ${BACKUP_KEY}`);
    expect(JSON.parse(hit?.body ?? "{}").model).toBe("llama-3.3-70b-versatile");
    const rows = await recordedRows(app);
    const answering = rows.find((r) => r.id === res.response.headers.get("x-voxgate-request-id"));
    expect(answering).toMatchObject({ model_id: "groq/llama-3.3-70b-versatile", status: "fallback", fallback_from: "openai/gpt-4.1-mini", output_tokens: U.output_tokens });
    expect(rows.some((r) => r.model_id === "openai/gpt-4.1-mini" && r.status === "error" && r.error_message === "upstream answered 503")).toBe(true);
  });

  it("a stream cut before response.completed is recorded as an error with the deltas seen and the input estimate", async () => {
    // created, in_progress, item added, part added, 2 deltas (on both: openai may still cool down from the 503 above)
    stub.script({ dropAfterEvents: 6 });
    backup.script({ dropAfterEvents: 6 });
    const res = await fetch(`${base()}/responses`, {
      method: "POST",
      headers: { authorization: `Bearer ${OPERATOR_KEY}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "openai/gpt-4.1-mini", input: "x".repeat(40), stream: true }),
    });
    await res.text().catch(() => "");
    const row = await rowOf(res.headers.get("x-voxgate-request-id"));
    expect(row).toMatchObject({ status: "error", error_message: "upstream answer cut off", input_tokens: 10, output_tokens: 2 });
  });

  it("a malformed body is a 400 in OpenAI's shape, never sent upstream", async () => {
    const from = stub.hits.length;
    const res = await fetch(`${base()}/responses`, {
      method: "POST",
      headers: { authorization: `Bearer ${OPERATOR_KEY}`, "content-type": "application/json" },
      body: '{"model": 7}',
    });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe("invalid_request");
    expect(stub.hits.length).toBe(from);
  });
});
