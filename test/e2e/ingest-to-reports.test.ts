import { randomUUID } from "node:crypto";
import { beforeAll, describe, expect, it } from "vitest";
import { moneyNumber, sumMoney } from "../../src/money.js";
import { ACME, AUTH_YAML, record } from "../ingest/helpers.js";
import { useTestApp } from "../support/app.js";

/**
 * The production path end to end: records posted to /v1/ingest (as an agent would, with its tenant
 * key) are what every read route reports, and the routes agree with each other to the 1e-10 USD.
 */
describe("POST /v1/ingest → costs, latency, logs, sessions, billing usage", () => {
  const session = `e2e-${randomUUID()}`;
  const project = "e2e";
  const posted = [
    record({ session_id: session, project, ttfb_ms: 100, total_latency_ms: 900, input_tokens: 1200, output_tokens: 300 }),
    record({ session_id: session, project, ttfb_ms: 300, total_latency_ms: 1100, input_tokens: 800, output_tokens: 100 }),
    record({ session_id: session, project, modality: "stt", model_id: "deepgram/nova-3", audio_seconds: 12.5, ttfb_ms: 50, total_latency_ms: 400 }),
    record({ session_id: session, project, modality: "tts", model_id: "elevenlabs/eleven_flash_v2_5", characters: 640, status: "error", error_message: "vendor 503" }),
  ];

  const t = useTestApp({ yaml: AUTH_YAML });
  beforeAll(async () => {
    const res = await t.call("POST", "/v1/ingest", { key: ACME, body: posted });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ accepted: posted.length, skipped: 0 });
  });

  const get = async <T>(path: string): Promise<T> => {
    const res = await t.call("GET", path, { key: ACME });
    expect(res.status, path).toBe(200);
    return (await res.json()) as T;
  };

  it("every read route reports the posted records, and they agree on the money", async () => {
    const logs = await get<{ id: string; cost_usd: number; status: string; session_id: string | null }[]>(`/v1/logs?project=${project}`);
    expect(logs.map((l) => l.id).sort()).toEqual(posted.map((p) => p.id).sort());
    expect(logs.find((l) => l.id === posted[3]?.id)?.status).toBe("error");
    const total = moneyNumber(sumMoney(logs.map((l) => l.cost_usd)));
    expect(total).toBeGreaterThan(0);

    const costs = await get<{ total: number; requests: number; by_model: Record<string, { requests: number }> }>(`/v1/costs?period=today&project=${project}`);
    expect(costs.total).toBe(total);
    expect(costs.requests).toBe(posted.length);
    expect(costs.by_model["openai/gpt-4.1-mini"]?.requests).toBe(2);

    const latency = await get<{ models: Record<string, { requests: number; avg_ttfb_ms: number }> }>(`/v1/latency?period=today&project=${project}`);
    expect(latency.models["openai/gpt-4.1-mini"]).toMatchObject({ requests: 2, avg_ttfb_ms: 200 });
    expect(latency.models["deepgram/nova-3"]).toMatchObject({ requests: 1, avg_ttfb_ms: 50 });

    const sessions = await get<{ id: string; request_count: number; total_cost_usd: number; modalities: string[] }[]>("/v1/sessions");
    expect(sessions.find((s) => s.id === session)).toMatchObject({ request_count: 4, total_cost_usd: total, modalities: ["llm", "stt", "tts"] });

    const now = new Date();
    const from = new Date(now.getTime() - 3_600_000).toISOString();
    const to = new Date(now.getTime() + 60_000).toISOString();
    const usage = await get<{ tenants: { tenant: string; requests: number; recorded_cost_usd: number; rated_revenue_usd: number }[] }>(
      `/v1/billing/usage?from=${encodeURIComponent(from)}&to=${encodeURIComponent(to)}`,
    );
    const acme = usage.tenants.find((x) => x.tenant === "acme");
    expect(acme).toMatchObject({ requests: posted.length, recorded_cost_usd: total });
    expect(acme?.rated_revenue_usd).toBeGreaterThan(0);
  });
});
