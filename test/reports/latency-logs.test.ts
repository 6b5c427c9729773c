import { beforeAll, describe, expect, it } from "vitest";
import type { ModelLatency } from "../../src/reports/latency.js";
import type { RequestLogRecord } from "../../src/reports/logs.js";
import { summarizeSamples } from "../../src/stats/summary.js";
import { useTestApp } from "../support/app.js";
import { DAY, HOUR, insertRequests, KEYS, MIN, REPORTS_YAML, row } from "./fixtures.js";

interface LatencyBody {
  period: string;
  project: string | null;
  models: Record<string, ModelLatency>;
}

const GPT = "openai/gpt-4.1-mini";
const NOVA = "deepgram/nova-3";

describe("GET /v1/latency, /v1/logs and their /api adapters", () => {
  const t = useTestApp({ yaml: REPORTS_YAML });
  beforeAll(async () => {
    const db = t.services.database.db;
    const acme = { tenant_id: "acme", project: "support" };
    await insertRequests(db, [
      row({ ...acme, agoMs: 10 * MIN, ttfb_ms: 100, total_latency_ms: 1000, cost_usd: "0.01" }),
      row({ ...acme, agoMs: 2 * HOUR, ttfb_ms: 200, total_latency_ms: 2000, cost_usd: "0.02" }),
      row({ ...acme, agoMs: 5 * HOUR, ttfb_ms: 300, total_latency_ms: 3000, status: "error", cost_usd: "0.03" }),
      // Probe traffic: counted in logs and costs, never in latency.
      row({ ...acme, agoMs: 3 * HOUR, ttfb_ms: 99_999, total_latency_ms: 99_999, is_probe: true }),
      row({ ...acme, agoMs: 20 * HOUR, model_id: NOVA, modality: "stt", project: "sales", ttfb_ms: 50, total_latency_ms: 400 }),
      row({ ...acme, agoMs: 3 * DAY, ttfb_ms: 400, total_latency_ms: 4000 }),
      row({ ...acme, agoMs: 20 * DAY, ttfb_ms: 500, total_latency_ms: null }),
      row({ tenant_id: "globex", agoMs: HOUR, ttfb_ms: 7, total_latency_ms: 70, project: "support" }),
    ]);
  });

  const latency = async (path: string, key = KEYS.acme) => {
    const res = await t.call("GET", path, { key });
    expect(res.status).toBe(200);
    return (await res.json()) as LatencyBody;
  };

  it("per-model average and percentiles of TTFB and total latency, probes excluded", async () => {
    const body = await latency("/v1/latency");
    expect(body.period).toBe("today");
    expect(Object.keys(body.models).sort()).toEqual([NOVA, GPT].sort());
    const gpt = body.models[GPT];
    const ttfb = summarizeSamples([100, 200, 300]);
    const total = summarizeSamples([1000, 2000, 3000]);
    expect(gpt).toEqual({
      modality: "llm",
      provider: "openai",
      requests: 3,
      ttfb_samples: 3,
      avg_ttfb_ms: 200,
      p50_ttfb_ms: ttfb?.p50,
      p95_ttfb_ms: ttfb?.p95,
      p99_ttfb_ms: ttfb?.p99,
      total_latency_samples: 3,
      avg_total_latency_ms: 2000,
      p50_total_latency_ms: total?.p50,
      p95_total_latency_ms: total?.p95,
      p99_total_latency_ms: total?.p99,
    });
    // The 1% sketch: p50 within 1% of the median sample, p99 of the largest.
    expect(Math.abs((gpt?.p50_ttfb_ms ?? 0) - 200)).toBeLessThanOrEqual(2);
    expect(Math.abs((gpt?.p99_total_latency_ms ?? 0) - 3000)).toBeLessThanOrEqual(30);
  });

  it("week and month widen the window; samples missing a value are not zeros", async () => {
    expect((await latency("/v1/latency?period=week")).models[GPT]?.avg_ttfb_ms).toBe(250);
    const month = (await latency("/v1/latency?period=month")).models[GPT];
    expect(month?.requests).toBe(5);
    expect(month?.ttfb_samples).toBe(5);
    expect(month?.avg_ttfb_ms).toBe(300);
    expect(month?.total_latency_samples).toBe(4);
    expect(month?.avg_total_latency_ms).toBe(2500);
  });

  it("filters by project and scopes by tenant", async () => {
    const sales = await latency("/v1/latency?project=sales");
    expect(sales.project).toBe("sales");
    expect(Object.keys(sales.models)).toEqual([NOVA]);
    const globex = await latency("/v1/latency", KEYS.globex);
    expect(globex.models[GPT]?.avg_ttfb_ms).toBe(7);
    expect(globex.models[GPT]?.requests).toBe(1);
    const ops = await latency("/v1/latency", KEYS.ops);
    expect(ops.models[GPT]?.requests).toBe(4);
    expect((await latency("/v1/latency?project=%27%3B%20DROP%20TABLE%20requests%3B--")).models).toEqual({});
  });

  it("refuses period all and unknown periods on latency", async () => {
    for (const p of ["all", "year", ""]) {
      const res = await t.call("GET", `/v1/latency?period=${p}`, { key: KEYS.acme });
      expect(res.status).toBe(422);
    }
    expect((await t.call("GET", "/v1/latency")).status).toBe(401);
    expect((await t.call("GET", "/v1/latency", { key: KEYS.ingestOnly })).status).toBe(403);
  });

  it("/api/latency is the same report", async () => {
    const res = await t.call("GET", "/api/latency?period=week", { key: KEYS.acme });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual(await latency("/v1/latency?period=week"));
    expect((await t.call("GET", "/api/latency?period=decade", { key: KEYS.acme })).status).toBe(422);
  });

  const logs = async (path: string, key = KEYS.acme) => {
    const res = await t.call("GET", path, { key });
    expect(res.status).toBe(200);
    return (await res.json()) as RequestLogRecord[];
  };

  it("logs: newest first, spec fields, tenant-scoped", async () => {
    const rows = await logs("/v1/logs");
    expect(rows).toHaveLength(7);
    const times = rows.map((r) => Date.parse(r.timestamp));
    expect([...times].sort((a, b) => b - a)).toEqual(times);
    expect(rows[0]).toMatchObject({ project: "support", modality: "llm", model_id: GPT, cost_usd: 0.01, total_latency_ms: 1000, status: "success" });
    expect(rows[0]?.timestamp).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    expect(rows.find((r) => r.status === "error")?.cost_usd).toBe(0.03);
    expect(await logs("/v1/logs", KEYS.globex)).toHaveLength(1);
    expect(await logs("/v1/logs", KEYS.ops)).toHaveLength(8);
  });

  it("logs: modality and project filters", async () => {
    expect((await logs("/v1/logs?modality=stt")).map((r) => r.model_id)).toEqual([NOVA]);
    expect((await logs("/v1/logs?project=sales")).map((r) => r.model_id)).toEqual([NOVA]);
    expect(await logs("/v1/logs?project=support&modality=tts")).toEqual([]);
    expect(await logs(`/v1/logs?project=${encodeURIComponent("support' OR '1'='1")}`)).toEqual([]);
  });

  it("logs: limit 1 and 1000 are accepted; 0, 1001, -1, abc, 1.5 and empty are 422 naming the field", async () => {
    expect(await logs("/v1/logs?limit=1")).toHaveLength(1);
    expect(await logs("/v1/logs?limit=1000")).toHaveLength(7);
    for (const bad of ["0", "1001", "-1", "abc", "1.5", ""]) {
      const res = await t.call("GET", `/v1/logs?limit=${bad}`, { key: KEYS.acme });
      expect(res.status, bad).toBe(422);
      const body = (await res.json()) as { error: { code: string; details: { path: string }[] } };
      expect(body.error.details.map((d) => d.path)).toContain("limit");
    }
    const mod = await t.call("GET", "/v1/logs?modality=video", { key: KEYS.acme });
    expect(mod.status).toBe(422);
    expect(((await mod.json()) as { error: { details: { path: string }[] } }).error.details[0]?.path).toBe("modality");
  });

  it("/api/logs is the same query with the same limits", async () => {
    expect(await logs("/api/logs?limit=2")).toEqual(await logs("/v1/logs?limit=2"));
    expect((await t.call("GET", "/api/logs?limit=1001", { key: KEYS.acme })).status).toBe(422);
    expect((await t.call("GET", "/api/logs")).status).toBe(401);
  });

  it("/api/overview: totals, today's spend, active models and configured providers", async () => {
    const res = await t.call("GET", "/api/overview", { key: KEYS.acme });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({
      total_requests: 7,
      total_cost_today: 0.06,
      total_cost_all: 0.06,
      active_models: 2,
      providers_configured: 2,
    });
    const sales = await (await t.call("GET", "/api/overview?project=sales", { key: KEYS.acme })).json();
    expect(sales).toEqual({ total_requests: 1, total_cost_today: 0, total_cost_all: 0, active_models: 1, providers_configured: 2 });
    const ops = (await (await t.call("GET", "/api/overview", { key: KEYS.ops })).json()) as { total_requests: number };
    expect(ops.total_requests).toBe(8);
    expect((await t.call("GET", `/api/overview?project=${"x".repeat(201)}`, { key: KEYS.ops })).status).toBe(422);
  });
});
