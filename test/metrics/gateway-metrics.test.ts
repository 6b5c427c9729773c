import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ACME_KEY, openaiChatYaml, OPERATOR_KEY, recordedRows } from "../gateway/support.js";
import { useTestApp } from "../support/app.js";
import { openaiChatStub } from "../support/stubs/openai-chat.js";
import type { StubServer } from "../support/stubs/stub-server.js";

/**
 * The operations series about gateway traffic on GET /v1/metrics: budget use per project (as the
 * budget gate sees it), attempts per provider and status (the provider error rate), TTFB per
 * modality; driven by real calls through the OpenAI SDK to a loopback vendor stub.
 */

let stub: StubServer;
beforeAll(async () => {
  stub = await openaiChatStub().start();
});
afterAll(async () => {
  await stub?.close();
});
const t = useTestApp(() => ({
  listen: true,
  yaml: `${openaiChatYaml(stub.url)}projects:
  support: { daily_budget: 0.00001 }
  acme-app: { daily_budget: 100, tenant_id: acme }
  unbudgeted: {}
`,
}));

const chat = (key: string, project: string) =>
  new OpenAI({ apiKey: key, baseURL: `${t.base}/openai/v1`, maxRetries: 0, defaultHeaders: { "x-voxgate-project": project } }).chat.completions.create({
    model: "openai/gpt-4.1-mini",
    messages: [{ role: "user", content: "hi" }],
  });

function samples(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split("\n")) {
    if (line === "" || line.startsWith("#")) continue;
    const cut = line.lastIndexOf(" ");
    out.set(line.slice(0, cut), Number(line.slice(cut + 1)));
  }
  return out;
}
const scrape = async (key: string) => {
  const res = await t.call("GET", "/v1/metrics", { key });
  expect(res.status).toBe(200);
  return samples(await res.text());
};

describe("GET /v1/metrics: budgets, provider errors, TTFB per modality", () => {
  beforeAll(async () => {
    await chat(OPERATOR_KEY, "support");
    await chat(OPERATOR_KEY, "support");
    stub.script({ status: 503 });
    await expect(chat(OPERATOR_KEY, "unbudgeted")).rejects.toThrow();
    await chat(ACME_KEY, "acme-app");
    await recordedRows(t);
  });

  it("counts written attempts per provider and status (operator keys only)", async () => {
    const s = await scrape(OPERATOR_KEY);
    expect(s.get('voxgate_gateway_attempts_total{provider="openai",status="success"}')).toBe(3);
    expect(s.get('voxgate_gateway_attempts_total{provider="openai",status="error"}')).toBe(1);
    expect(s.get('voxgate_gateway_attempts_total{provider="openai",status="fallback"}')).toBe(0);
    expect([...(await scrape(ACME_KEY)).keys()].filter((k) => k.startsWith("voxgate_gateway_attempts_total"))).toEqual([]);
  });

  it("publishes budget use per budgeted project, as the budget gate sees it; a tenant key sees its own projects", async () => {
    const s = await scrape(OPERATOR_KEY);
    const spend = t.services.gateway.budgets.spend("support");
    expect(spend).toBeGreaterThan(0);
    expect(s.get('voxgate_project_budget_used_ratio{project="support"}')).toBe(spend / 0.00001);
    expect(s.get('voxgate_project_budget_used_ratio{project="support"}')).toBeGreaterThan(1);
    expect(s.get('voxgate_project_budget_used_ratio{project="acme-app"}')).toBe(t.services.gateway.budgets.spend("acme-app") / 100);
    expect(s.has('voxgate_project_budget_used_ratio{project="unbudgeted"}')).toBe(false);
    const acme = await scrape(ACME_KEY);
    expect([...acme.keys()].filter((k) => k.startsWith("voxgate_project_budget_used_ratio"))).toEqual(['voxgate_project_budget_used_ratio{project="acme-app"}']);
  });

  it("publishes TTFB quantiles per modality, only for modalities with traffic", async () => {
    const s = await scrape(OPERATOR_KEY);
    const rows = (await recordedRows(t)).filter((r) => r.ttfb_ms !== null);
    expect(rows.length).toBeGreaterThan(0);
    expect(s.get('voxgate_request_ttfb_by_modality_seconds{modality="llm",quantile="0.99"}')).toBeGreaterThan(0);
    expect([...s.keys()].some((k) => k.includes('modality="stt"'))).toBe(false);
  });
});
