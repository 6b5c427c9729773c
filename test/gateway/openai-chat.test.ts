import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { useTestApp } from "../support/app.js";
import { DEFAULT_CHAT_USAGE, openaiChatStub, STREAM_PIECES } from "../support/stubs/openai-chat.js";
import type { StubServer } from "../support/stubs/stub-server.js";
import { ACME_KEY, GLOBEX_KEY, INGEST_KEY, openaiChatYaml, OPERATOR_KEY, PROVIDER_KEY, READ_KEY, recordedRows } from "./support.js";

let stub: StubServer;

beforeAll(async () => {
  stub = await openaiChatStub().start();
});
afterAll(async () => {
  await stub?.close();
});
const app = useTestApp(() => ({
  listen: true,
  yaml: `${openaiChatYaml(stub.url)}stacks:
  fast: { llm: openai/gpt-4.1-mini }
projects:
  support: { default_stack: fast }
`,
}));

const client = (key = OPERATOR_KEY, headers: Record<string, string> = {}) =>
  new OpenAI({ apiKey: key, baseURL: `${app.base}/openai/v1`, maxRetries: 0, defaultHeaders: headers });

// (8 uncached × 0.4 + 4 cached × 0.1 + 5 out × 1.6) / 1e6, catalog list prices of openai/gpt-4.1-mini.
const EXPECTED_COST = "0.0000116000";
const EXPECTED_PRICE = "0.0000145000"; // × default_markup 1.25

describe("OpenAI chat completions through Voxgate", () => {
  it("answers JSON, sends the provider key upstream, records exact units and price", async () => {
    const before = stub.hits.length;
    const res = await client(OPERATOR_KEY, { "X-Voxgate-Project": "support", "X-Voxgate-Session": "sess-1" }).chat.completions
      .create({ model: "openai/gpt-4.1-mini", messages: [{ role: "user", content: "hi" }] })
      .withResponse();
    expect(res.data.choices[0]?.message.content).toBe(STREAM_PIECES.join(""));
    const requestId = res.response.headers.get("x-voxgate-request-id");
    expect(requestId).toMatch(/^[0-9a-f-]{36}$/);
    const hit = stub.hits[before];
    expect(hit?.headers.authorization).toBe(`Bearer ${PROVIDER_KEY}`);
    expect(JSON.stringify(hit?.headers)).not.toContain(OPERATOR_KEY);
    expect(JSON.parse(hit?.body ?? "{}").model).toBe("gpt-4.1-mini");

    const row = (await recordedRows(app)).find((r) => r.id === requestId);
    expect(row).toMatchObject({
      project: "support",
      session_id: "sess-1",
      model_id: "openai/gpt-4.1-mini",
      status: "success",
      input_tokens: DEFAULT_CHAT_USAGE.prompt_tokens,
      output_tokens: DEFAULT_CHAT_USAGE.completion_tokens,
      cached_input_tokens: DEFAULT_CHAT_USAGE.cached_tokens,
      cost_usd: EXPECTED_COST,
      rated_price_usd: EXPECTED_PRICE,
      tenant_id: null,
    });
    expect(row?.ttfb_ms).toBeGreaterThanOrEqual(0);
    expect(row?.total_latency_ms).toBeGreaterThanOrEqual(row?.ttfb_ms ?? 0);
  });

  it("takes a bare vendor name, a stack and the project's default_stack; the path prefix attributes", async () => {
    await client().chat.completions.create({ model: "gpt-4.1-mini", messages: [{ role: "user", content: "a" }] });
    await client().chat.completions.create({ model: "stack:fast", messages: [{ role: "user", content: "b" }] });
    const viaPath = new OpenAI({ apiKey: OPERATOR_KEY, baseURL: `${app.base}/p/support/s/sess-path/openai/v1`, maxRetries: 0 });
    // No model named: the project's default_stack decides (a raw request, since the SDK types require one).
    const res = await fetch(`${app.base}/p/support/s/sess-path/openai/v1/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${OPERATOR_KEY}`, "content-type": "application/json" },
      body: JSON.stringify({ messages: [{ role: "user", content: "c" }] }),
    });
    expect(res.status).toBe(200);
    await viaPath.chat.completions.create({ model: "openai/gpt-4.1-mini", messages: [{ role: "user", content: "d" }] });
    const rows = await recordedRows(app);
    expect(rows.filter((r) => r.session_id === "sess-path" && r.project === "support")).toHaveLength(2);
  });

  it("answers an unknown model 404 in OpenAI's shape listing the routable ids", async () => {
    const err = await client()
      .chat.completions.create({ model: "openai/nope", messages: [{ role: "user", content: "x" }] })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.NotFoundError);
    const e = err as InstanceType<typeof OpenAI.NotFoundError>;
    expect(e.code).toBe("model_not_found");
    expect(e.message).toContain("openai/gpt-4.1-mini");
  });

  it("refuses a missing or wrong key 401, and ingest-only or read-only keys 403", async () => {
    for (const [key, status] of [
      ["not-a-voxgate-key-000000000", 401],
      [INGEST_KEY, 403],
      [READ_KEY, 403],
    ] as const) {
      const err = await client(key)
        .chat.completions.create({ model: "openai/gpt-4.1-mini", messages: [{ role: "user", content: "x" }] })
        .catch((e: unknown) => e);
      expect((err as { status?: number }).status).toBe(status);
    }
  });

  it("accepts a minted vk_ key with the infer scope, bound to its tenant", async () => {
    const minted = await app.call("POST", "/v1/api-keys", { key: OPERATOR_KEY, body: { name: "agent", tenant_id: "initech", scopes: ["infer"] } });
    const { plaintext } = (await minted.json()) as { plaintext: string };
    const res = await client(plaintext).chat.completions.create({ model: "openai/gpt-4.1-mini", messages: [{ role: "user", content: "x" }] }).withResponse();
    const row = (await recordedRows(app)).find((r) => r.id === res.response.headers.get("x-voxgate-request-id"));
    expect(row?.tenant_id).toBe("initech");
  });

  it("records a tenant key's calls under its tenant, visible to that tenant only", async () => {
    const res = await client(ACME_KEY, { "X-Voxgate-Project": "acme-proj" })
      .chat.completions.create({ model: "openai/gpt-4.1-mini", messages: [{ role: "user", content: "x" }] })
      .withResponse();
    const id = res.response.headers.get("x-voxgate-request-id");
    const row = (await recordedRows(app)).find((r) => r.id === id);
    expect(row?.tenant_id).toBe("acme");
    await client(GLOBEX_KEY, { "X-Voxgate-Project": "globex-proj" }).chat.completions.create({ model: "openai/gpt-4.1-mini", messages: [{ role: "user", content: "y" }] });
    await app.services.gateway.recorder.flush();
    const logs = async (key: string) => ((await (await app.call("GET", "/v1/logs?limit=1000", { key })).json()) as { project: string }[]).map((l) => l.project);
    expect(new Set(await logs(ACME_KEY))).toEqual(new Set(["acme-proj"]));
    expect(new Set(await logs(GLOBEX_KEY))).toEqual(new Set(["globex-proj"]));
    expect(await logs(OPERATOR_KEY)).toEqual(expect.arrayContaining(["acme-proj", "globex-proj", "support"]));
  });

  it("answers malformed bodies 4xx, never 5xx", async () => {
    const bodies = ["", "{", "[]", "null", '"x"', '{"model":5,"messages":[]}', '{"model":"openai/gpt-4.1-mini"}', '{"model":"openai/gpt-4.1-mini","messages":[],"stream_options":7}'];
    for (const body of bodies) {
      const res = await fetch(`${app.base}/openai/v1/chat/completions`, {
        method: "POST",
        headers: { authorization: `Bearer ${OPERATOR_KEY}`, "content-type": "application/json" },
        body,
      });
      expect(res.status, body).toBeGreaterThanOrEqual(400);
      expect(res.status, body).toBeLessThan(500);
      expect(res.headers.get("x-voxgate-request-id")).toBeTruthy();
    }
  });
});

describe("security headers on gateway answers", () => {
  const post = (body: unknown) =>
    fetch(`${app.base}/openai/v1/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${OPERATOR_KEY}`, "content-type": "application/json" },
      body: JSON.stringify(body),
    });

  it("a relayed answer, a stream and an error: not cached, framed or sniffed, nothing loaded; no document policies", async () => {
    const answers = [
      await post({ model: "openai/gpt-4.1-mini", messages: [{ role: "user", content: "hi" }] }),
      // The stub streams with cache-control: no-cache; Voxgate's no-store wins.
      await post({ model: "openai/gpt-4.1-mini", stream: true, messages: [{ role: "user", content: "hi" }] }),
      await post({ model: "openai/no-such-model", messages: [] }),
    ];
    expect(answers.map((r) => r.status)).toEqual([200, 200, 404]);
    for (const res of answers) {
      await res.arrayBuffer();
      expect(res.headers.get("x-content-type-options")).toBe("nosniff");
      expect(res.headers.get("content-security-policy")).toMatch(/^default-src 'none'; frame-ancestors 'none'/);
      expect(res.headers.get("x-frame-options")).toBe("DENY");
      expect(res.headers.get("cache-control")).toBe("no-store");
      // Page policies (GATEWAY_SECURITY_HEADERS says why): not on SDK answers.
      for (const name of ["cross-origin-opener-policy", "origin-agent-cluster", "x-xss-protection", "x-dns-prefetch-control"]) {
        expect(res.headers.get(name)).toBeNull();
      }
    }
  });
});

describe("recorder", () => {
  it("counts dropped records in /v1/metrics", async () => {
    const res = await app.call("GET", "/v1/metrics", { key: OPERATOR_KEY });
    const text = await res.text();
    expect(text).toMatch(/^voxgate_gateway_records_dropped_total 0$/m);
  });
});

describe("GET /openai/v1/models", () => {
  it("lists the routable models with their modality, and the configured stacks", async () => {
    const list = await client().models.list();
    expect(list.data.map((m) => m.id)).toEqual(["openai/gpt-4.1-mini"]);
    const raw = (await (await fetch(`${app.base}/openai/v1/models`, { headers: { authorization: `Bearer ${OPERATOR_KEY}` } })).json()) as {
      data: { id: string; modality: string }[];
      stacks: Record<string, unknown>;
    };
    expect(raw.data[0]?.modality).toBe("llm");
    expect(raw.stacks).toEqual({ fast: { llm: "openai/gpt-4.1-mini" } });
    expect((await fetch(`${app.base}/openai/v1/models`, { headers: { authorization: `Bearer ${INGEST_KEY}` } })).status).toBe(403);
  });
});
