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
