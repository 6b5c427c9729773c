import { randomUUID } from "node:crypto";
import { describe, expect, it } from "vitest";
import { compileCatalog } from "../../src/billing/catalog.js";
import { compileRateCard, rateRequest, seedRule } from "../../src/billing/rate.js";
import { toRuleDef } from "../../src/billing/rule-form.js";
import { createTestApp, type TestApp, useTestApp } from "../support/app.js";
import { http, json } from "./http.js";

// A tenant-bound key cannot set its own price, nor reopen an invoiced period.
const OPERATOR = "operator-pricing-key-0123456789";
const ACME = "acme-writer-pricing-key-0123456789";
const GLOBEX = "globex-writer-pricing-key-0123456789";
const yaml = (extra = "") => `
auth:
  api_keys:
    - ${OPERATOR}
    - { key: ${ACME}, scopes: [read, write], tenant_id: acme }
    - { key: ${GLOBEX}, scopes: [read, write], tenant_id: globex }
pricing:
  catalog:
    "openai/gpt-4.1-mini": { input_price_usd: 1.25, output_price_usd: 5 }
rate_card:
  default_markup: 1.2
  rules:
    - { provider: deepgram, sets: cost, fixed: 0.0043, unit: minute }
${extra}`;

const DAY = 86_400_000;
const llm = (o: Record<string, unknown> = {}) => ({
  id: randomUUID(),
  timestamp: new Date(Date.now() - 60_000).toISOString(),
  modality: "llm",
  model_id: "openai/gpt-4.1-mini",
  input_tokens: 10_000_000,
  output_tokens: 10_000_000,
  cost_usd: 0,
  ...o,
});

interface Usage {
  tenants: { tenant: string | null; rated_revenue_usd: number; recorded_cost_usd: number }[];
}
const WINDOW = `from=2000-01-01&to=${new Date(Date.now() + DAY).toISOString().slice(0, 10)}`;
const usageOf = async (t: TestApp, tenant: string | null) => {
  const u = await json<Usage>(http(t, "GET", `/v1/billing/usage?${WINDOW}`, { key: OPERATOR }), 200);
  return u.tenants.find((x) => x.tenant === tenant);
};

describe("tenant-bound keys and the price basis", () => {
  const t = useTestApp({ yaml: yaml() });

  it("a tenant reporting cost_usd 0 for a catalogued model is rated on the catalog; its reported cost is kept", async () => {
    await json(http(t, "POST", "/v1/ingest", { key: ACME, body: [llm()] }), 200);
    // Catalog: 10M × $1.25 + 10M × $5 per 1M tokens = $62.50; default markup 1.2.
    expect(await usageOf(t, "acme")).toMatchObject({ rated_revenue_usd: 75, recorded_cost_usd: 0 });
  });

  it("an operator key keeps today's rule: the reported cost is the basis", async () => {
    await json(http(t, "POST", "/v1/ingest", { key: OPERATOR, body: [llm({ cost_usd: 10 })] }), 200);
    expect(await usageOf(t, null)).toMatchObject({ rated_revenue_usd: 12, recorded_cost_usd: 10 });
  });

  it("a `sets: cost` rule is the collector's basis over the tenant's figure", async () => {
    const stt = { id: randomUUID(), timestamp: new Date(Date.now() - 60_000).toISOString(), modality: "stt", model_id: "deepgram/nova-3", audio_seconds: 6000, cost_usd: 0.0001 };
    await json(http(t, "POST", "/v1/ingest", { key: GLOBEX, body: [stt] }), 200);
    // 100 minutes × $0.0043 × 1.2
    expect((await usageOf(t, "globex"))?.rated_revenue_usd).toBeCloseTo(0.516, 10);
  });

  it("without any collector basis the tenant's cost is used, and counted as self-priced in the gaps report", async () => {
    const custom = llm({ model_id: "acme-lab/private-llm", input_tokens: 1000, output_tokens: 1000, cost_usd: 3 });
    await json(http(t, "POST", "/v1/ingest", { key: ACME, body: [custom] }), 200);
    const gaps = await json<{ gaps: { model_id: string; self_priced_requests: number; unknown_requests: number }[] }>(
      http(t, "GET", "/v1/billing/rate-card/gaps?tenant=acme", { key: OPERATOR }),
      200,
    );
    expect(gaps.gaps.find((g) => g.model_id === "acme-lab/private-llm")).toMatchObject({ self_priced_requests: 1, unknown_requests: 0 });
    expect(gaps.gaps.find((g) => g.model_id === "openai/gpt-4.1-mini")).toBeUndefined();
    // The tenant sees it too, for its own tenant.
    const own = await json<{ gaps: { model_id: string }[] }>(http(t, "GET", "/v1/billing/rate-card/gaps", { key: ACME }), 200);
    expect(own.gaps.map((g) => g.model_id)).toEqual(["acme-lab/private-llm"]);
  });

  it("a tenant-bound key cannot date records beyond the horizon (default 7 days); the operator may backfill", async () => {
    const old = [llm({ timestamp: "2001-01-01T00:00:00Z" }), llm({ timestamp: new Date(Date.now() - 8 * DAY).toISOString() })];
    const refused = await json<{ accepted: number; skipped: number; skipped_records: { reason: string }[] }>(http(t, "POST", "/v1/ingest", { key: ACME, body: old }), 200);
    expect(refused).toMatchObject({ accepted: 0, skipped: 2 });
    expect(refused.skipped_records[0]?.reason).toContain("cost_tracking.backdate_horizon_days");
    const recent = await json<{ accepted: number }>(http(t, "POST", "/v1/ingest", { key: ACME, body: [llm({ timestamp: new Date(Date.now() - 6 * DAY).toISOString() })] }), 200);
    expect(recent.accepted).toBe(1);
    const backfill = await json<{ accepted: number }>(http(t, "POST", "/v1/ingest", { key: OPERATOR, body: old }), 200);
    expect(backfill.accepted).toBe(2);
  });

  it("the horizon is configurable", async () => {
    const wide = await createTestApp({ yaml: yaml("cost_tracking: { backdate_horizon_days: 30 }") });
    try {
      const r = await json<{ accepted: number }>(http(wide, "POST", "/v1/ingest", { key: ACME, body: [llm({ timestamp: new Date(Date.now() - 20 * DAY).toISOString() })] }), 200);
      expect(r.accepted).toBe(1);
    } finally {
      await wide.close();
    }
  });
});

describe("rateRequest: the basis rule, pure", () => {
  const catalog = compileCatalog({ "openai/gpt-4.1-mini": { input_price_usd: 1.25, output_price_usd: 5 } });
  const card = compileRateCard(1.2, [seedRule(toRuleDef({ sets: "price", model: "acme-lab/fixed", fixed: 0.002, unit: "request" }))]);
  const input = (o: Partial<Parameters<typeof rateRequest>[0]>) => ({
    modality: "llm" as const,
    modelId: "openai/gpt-4.1-mini",
    provider: "openai",
    tenantId: "acme",
    status: "success" as const,
    inputTokens: 1_000_000,
    outputTokens: 1_000_000,
    cachedInputTokens: null,
    audioSeconds: null,
    characters: null,
    costUsd: 0,
    ...o,
  });

  it("tenant-bound: the catalog is the basis whatever cost is reported; the reported cost is what is recorded", () => {
    expect(rateRequest(input({}), card, catalog)).toEqual({ costUsd: 0, ratedPriceUsd: 7.5, rateRule: "cost_plus:1.2", pricing: "priced" });
    expect(rateRequest(input({ costUsd: 100 }), card, catalog)).toMatchObject({ costUsd: 100, ratedPriceUsd: 7.5 });
    expect(rateRequest(input({ costUsd: null }), card, catalog)).toMatchObject({ costUsd: 6.25, ratedPriceUsd: 7.5 });
  });

  it("untenanted: the reported cost is the basis (today's rule)", () => {
    expect(rateRequest(input({ tenantId: null, costUsd: 0 }), card, catalog)).toMatchObject({ costUsd: 0, ratedPriceUsd: 0, pricing: "priced" });
  });

  it("tenant-bound without a collector basis: self-priced on the reported cost; a fixed price needs no basis", () => {
    const uncatalogued = { modelId: "acme-lab/private", provider: "acme-lab" };
    expect(rateRequest(input({ ...uncatalogued, costUsd: 3 }), card, catalog)).toMatchObject({ costUsd: 3, ratedPriceUsd: 3.6, pricing: "self_priced" });
    expect(rateRequest(input({ ...uncatalogued, costUsd: null }), card, catalog)).toMatchObject({ ratedPriceUsd: null, pricing: "unknown" });
    expect(rateRequest(input({ modelId: "acme-lab/fixed", provider: "acme-lab", costUsd: 3 }), card, catalog)).toMatchObject({ ratedPriceUsd: 0.002, pricing: "priced" });
  });
});
