import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { useTestApp } from "../support/app.js";
import { openaiChatStub } from "../support/stubs/openai-chat.js";
import type { StubServer } from "../support/stubs/stub-server.js";
import { KEYS_YAML, OPERATOR_KEY, PROVIDER_KEY, recordedRows } from "./support.js";

let stub: StubServer;
let cheap: StubServer;

beforeAll(async () => {
  stub = await openaiChatStub().start();
  cheap = await openaiChatStub().start();
});
afterAll(async () => {
  await stub?.close();
  await cheap?.close();
});
const app = useTestApp(() => ({
  listen: true,
  yaml: `${KEYS_YAML}
providers:
  openai: { api_key: "${PROVIDER_KEY}", base_url: "${stub.url}/v1" }
  cheap: { type: openai_compatible, api_key: "sk-cheap-0123456789abcdef", base_url: "${cheap.url}/v1" }
models:
  llm:
    openai/gpt-4.1-mini: { provider: openai, model: gpt-4.1-mini }
    cheap/small: { provider: cheap, model: small }
stacks:
  economy: { llm: cheap/small }
projects:
  capped: { daily_budget: 0.00002, budget_action: block }
  warned: { daily_budget: 0.00001, budget_action: warn }
  throttled: { daily_budget: 0.00001, budget_action: throttle, throttle_stack: economy }
  reserved: { daily_budget: 0.0001159, budget_action: block }
  released: { daily_budget: 0.00001, budget_action: block }
`,
}));

const client = (project: string) => new OpenAI({ apiKey: OPERATOR_KEY, baseURL: `${app.base}/p/${project}/s/s1/openai/v1`, maxRetries: 3 });
const ask = (project: string, stream = false) =>
  stream
    ? client(project)
        .chat.completions.create({ model: "openai/gpt-4.1-mini", stream: true, messages: [{ role: "user", content: "hi" }] })
        .then(async (s) => {
          for await (const _ of s) {
          }
        })
    : client(project).chat.completions.create({ model: "openai/gpt-4.1-mini", messages: [{ role: "user", content: "hi" }] });

async function todaySpend(project: string): Promise<number> {
  const res = await app.call("GET", `/v1/projects/${project}`, { key: OPERATOR_KEY });
  return ((await res.json()) as { today_spend: number }).today_spend;
}

describe("budgets", () => {
  it("block: once the spend reaches daily_budget, calls are refused 402 budget_exceeded (not retried by the SDK) and reach no vendor", async () => {
    await ask("capped"); // 0.0000116
    await ask("capped", true); // SSE: 0.0000232 ≥ 0.00002
    const hits = stub.hits.length;
    const err = await ask("capped").catch((e: unknown) => e);
    expect((err as { status?: number }).status).toBe(402);
    expect((err as { code?: string }).code).toBe("budget_exceeded");
    expect(stub.hits.length).toBe(hits); // maxRetries 3: a 402 is not retried, and nothing reached the vendor

    const rows = (await recordedRows(app)).filter((r) => r.project === "capped");
    const spent = rows.reduce((sum, r) => sum + Number(r.cost_usd ?? 0), 0);
    expect(spent).toBeCloseTo(0.0000232, 12);
    expect(await todaySpend("capped")).toBeCloseTo(spent, 12);
    expect(rows.at(-1)).toMatchObject({ status: "error", error_message: expect.stringContaining("budget_exceeded") });
  });

  it("warn: over budget the call is served with a warning header", async () => {
    const first = await client("warned").chat.completions.create({ model: "openai/gpt-4.1-mini", messages: [{ role: "user", content: "a" }] }).withResponse();
    expect(first.response.headers.get("x-voxgate-budget-warning")).toBeNull();
    const second = await client("warned").chat.completions.create({ model: "openai/gpt-4.1-mini", messages: [{ role: "user", content: "b" }] }).withResponse();
    expect(second.response.status).toBe(200);
    expect(second.response.headers.get("x-voxgate-budget-warning")).toContain("warned");
  });

  it("throttle: over budget the call is served by the throttle_stack and recorded so", async () => {
    await ask("throttled");
    const cheapHits = cheap.hits.length;
    const { response } = await client("throttled").chat.completions.create({ model: "openai/gpt-4.1-mini", messages: [{ role: "user", content: "b" }] }).withResponse();
    expect(cheap.hits.length).toBe(cheapHits + 1);
    const row = (await recordedRows(app)).find((r) => r.id === response.headers.get("x-voxgate-request-id"));
    expect(row).toMatchObject({ model_id: "cheap/small", metadata: { budget_action: "throttle", requested_model: "openai/gpt-4.1-mini" } });
  });
});

/** 48 characters: the reservation estimates 12 input tokens, what the stub reports. */
const PROMPT_48 = "reserve twelve tokens of prompt for this call ok";

describe("budgets as reservations (block)", () => {
  it("50 parallel calls against a budget with room for 10: 10 are served, the rest refused 402, the recorded spend stays within one estimate of the budget", async () => {
    // Each answer costs 0.0000116 (12 in, 4 cached, 5 out); the estimate is 12 in + max_tokens 5 out = 0.0000128.
    // The budget is just under 10 answers (sums of float costs must not decide the count).
    expect(PROMPT_48.length).toBe(48);
    stub.fallback = { delayMs: 300 };
    const hits = stub.hits.length;
    try {
      const results = await Promise.all(
        Array.from({ length: 50 }, () =>
          client("reserved")
            .chat.completions.create({ model: "openai/gpt-4.1-mini", max_tokens: 5, messages: [{ role: "user", content: PROMPT_48 }] })
            .then(() => 200, (e: unknown) => (e as { status?: number }).status),
        ),
      );
      expect(results.filter((s) => s === 200)).toHaveLength(10);
      expect(results.filter((s) => s === 402)).toHaveLength(40);
    } finally {
      stub.fallback = {};
    }
    expect(stub.hits.length - hits).toBe(10);
    const rows = (await recordedRows(app)).filter((r) => r.project === "reserved");
    const spent = rows.reduce((sum, r) => sum + Number(r.cost_usd ?? 0), 0);
    expect(spent).toBeLessThanOrEqual(0.0001159 + 0.0000128);
    expect(rows.filter((r) => r.status === "success")).toHaveLength(10);
    expect(rows.filter((r) => r.error_message?.includes("budget_exceeded"))).toHaveLength(40);
  });

  it("a failed call releases its hold: the next call is served", async () => {
    // Room for one estimate only; the first call's upstream fails (500, no fallback) and costs nothing.
    stub.script({ status: 500 });
    const first = await client("released")
      .chat.completions.create({ model: "openai/gpt-4.1-mini", max_tokens: 5, messages: [{ role: "user", content: PROMPT_48 }] }, { maxRetries: 0 })
      .catch((e: unknown) => e);
    expect((first as { status?: number }).status).toBe(500);
    const second = await client("released").chat.completions.create({ model: "openai/gpt-4.1-mini", max_tokens: 5, messages: [{ role: "user", content: PROMPT_48 }] }, { maxRetries: 0 });
    expect(second.usage?.completion_tokens).toBe(5);
    const third = await client("released")
      .chat.completions.create({ model: "openai/gpt-4.1-mini", max_tokens: 5, messages: [{ role: "user", content: PROMPT_48 }] }, { maxRetries: 0 })
      .catch((e: unknown) => e);
    expect((third as { status?: number }).status).toBe(402);
  });
});
