import { ApiError, GoogleGenAI } from "@google/genai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { useTestApp } from "../support/app.js";
import { GEMINI_USAGE, geminiStub } from "../support/stubs/gemini.js";
import { STREAM_PIECES } from "../support/stubs/openai-chat.js";
import type { StubServer } from "../support/stubs/stub-server.js";
import { KEYS_YAML, OPERATOR_KEY, PROVIDER_KEY, recordedRows } from "./support.js";

let stub: StubServer;
let backup: StubServer;
const BACKUP_KEY = "AIza-backup-provider-key-0123456789";

beforeAll(async () => {
  stub = await geminiStub().start();
  backup = await geminiStub().start();
});
afterAll(async () => {
  await stub?.close();
  await backup?.close();
});
const app = useTestApp(() => ({
  listen: true,
  yaml: `${KEYS_YAML}
providers:
  gemini: { api_key: "${PROVIDER_KEY}", base_url: "${stub.url}" }
  gemini-backup: { type: gemini, api_key: "${BACKUP_KEY}", base_url: "${backup.url}" }
models:
  llm:
    gemini/gemini-2.5-flash: { provider: gemini, model: gemini-2.5-flash }
    gemini-backup/gemini-2.5-flash-lite: { provider: gemini-backup, model: gemini-2.5-flash-lite }
fallbacks:
  llm: [gemini/gemini-2.5-flash, gemini-backup/gemini-2.5-flash-lite]
projects:
  broke: { daily_budget: 0, budget_action: block }
`,
}));

const TEXT = STREAM_PIECES.join("");
// (11 - 4 cached) × $0.30 + 4 × $0.03 + (5 candidates + 3 thoughts) × $2.50 per 1M (gemini-2.5-flash), × 1.25.
const EXACT = {
  model_id: "gemini/gemini-2.5-flash",
  status: "success",
  input_tokens: GEMINI_USAGE.promptTokenCount,
  cached_input_tokens: GEMINI_USAGE.cachedContentTokenCount,
  output_tokens: GEMINI_USAGE.candidatesTokenCount + GEMINI_USAGE.thoughtsTokenCount,
  cost_usd: "0.0000222200",
  rated_price_usd: "0.0000277750",
};

const genai = (apiVersion?: string, base = `${app.base}/gemini`) => new GoogleGenAI({ apiKey: OPERATOR_KEY, httpOptions: { baseUrl: base, ...(apiVersion && { apiVersion }) } });

function expectProviderKeyOnly(s: StubServer, from: number, key = PROVIDER_KEY) {
  const hits = s.hits.slice(from);
  expect(hits.length).toBeGreaterThan(0);
  for (const hit of hits) {
    expect(hit.headers["x-goog-api-key"]).toBe(key);
    expect(JSON.stringify(hit.headers) + hit.path + hit.body).not.toContain(OPERATOR_KEY);
  }
}

const lastRow = async () => (await recordedRows(app)).at(-1);

describe("Google Gemini through Voxgate (@google/genai)", () => {
  it("generateContent on the SDK's default version (v1): provider key upstream, usageMetadata recorded and rated", async () => {
    const from = stub.hits.length;
    const res = await genai().models.generateContent({ model: "gemini-2.5-flash", contents: "hi" });
    expect(res.text).toBe(TEXT);
    expect(res.usageMetadata?.promptTokenCount).toBe(GEMINI_USAGE.promptTokenCount);
    expect(stub.hits[from]?.path).toBe("/v1/models/gemini-2.5-flash:generateContent");
    expectProviderKeyOnly(stub, from);
    const row = await lastRow();
    expect(row).toMatchObject(EXACT);
    expect(row?.metadata).toMatchObject({ reasoning_tokens: GEMINI_USAGE.thoughtsTokenCount });
  });

  it("generateContentStream on v1beta (LiveKit's genai 2.x default): text chunks, the last chunk's totals", async () => {
    const from = stub.hits.length;
    let text = "";
    for await (const chunk of await genai("v1beta").models.generateContentStream({ model: "gemini-2.5-flash", contents: "hi" })) text += chunk.text ?? "";
    expect(text).toBe(TEXT);
    expect(stub.hits[from]?.path).toBe("/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse");
    expectProviderKeyOnly(stub, from);
    const row = await lastRow();
    expect(row).toMatchObject(EXACT);
    expect(row?.ttfb_ms).toBeGreaterThanOrEqual(0);
  });

  it("takes the key as ?key= too (never forwarded) and attributes by the /p/{project}/s/{session} prefix", async () => {
    const from = stub.hits.length;
    const res = await fetch(`${app.base}/p/support/s/g-1/gemini/v1beta/models/gemini-2.5-flash:generateContent?key=${OPERATOR_KEY}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ contents: [{ role: "user", parts: [{ text: "hi" }] }] }),
    });
    expect(res.status).toBe(200);
    expectProviderKeyOnly(stub, from);
    expect(await lastRow()).toMatchObject({ ...EXACT, project: "support", session_id: "g-1" });
  });

  it("falls back before the first byte to the next Gemini provider, with its own key and model", async () => {
    stub.script({ status: 503 });
    const from = backup.hits.length;
    const res = await genai().models.generateContent({ model: "gemini/gemini-2.5-flash", contents: "hi" });
    expect(res.text).toBe(TEXT);
    expect(backup.hits[from]?.path).toBe("/v1/models/gemini-2.5-flash-lite:generateContent");
    expectProviderKeyOnly(backup, from, BACKUP_KEY);
    const rows = await recordedRows(app);
    expect(rows.at(-1)).toMatchObject({ model_id: "gemini-backup/gemini-2.5-flash-lite", status: "fallback", fallback_from: "gemini/gemini-2.5-flash" });
    expect(rows.at(-2)).toMatchObject({ model_id: "gemini/gemini-2.5-flash", status: "error" });
  });

  it("404 and 402 arrive as the SDK's ApiError with Google's status and a readable message", async () => {
    const notFound = await genai()
      .models.generateContent({ model: "gemini-9-nope", contents: "hi" })
      .catch((e: unknown) => e);
    expect(notFound).toBeInstanceOf(ApiError);
    expect((notFound as ApiError).status).toBe(404);
    expect((notFound as ApiError).message).toContain("model gemini-9-nope is not routable here");
    expect((notFound as ApiError).message).toContain("NOT_FOUND");

    const broke = await genai(undefined, `${app.base}/p/broke/s/s-1/gemini`)
      .models.generateContent({ model: "gemini-2.5-flash", contents: "hi" })
      .catch((e: unknown) => e);
    expect(broke).toBeInstanceOf(ApiError);
    expect((broke as ApiError).status).toBe(402);
    expect((broke as ApiError).message).toContain("project broke has reached its daily budget");
  });
});
