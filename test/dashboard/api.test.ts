import { beforeAll, describe, expect, it } from "vitest";
import type { CallDetail, CallRow } from "../../src/dashboard/calls.js";
import type { RequestLogDetail } from "../../src/dashboard/log-detail.js";
import type { CostSeries, LatencySeries } from "../../src/dashboard/series.js";
import type { Whoami } from "../../src/dashboard/whoami.js";
import { callLegs, calls } from "../../src/db/schema/index.js";
import { HOUR_MS } from "../../src/rollups/apply.js";
import type { RequestLogRecord } from "../../src/reports/logs.js";
import { summarizeSamples } from "../../src/stats/summary.js";
import { createTestApp, useTestApp } from "../support/app.js";
import { DAY, HOUR, insertRequests, KEYS, MIN, REPORTS_YAML, row } from "../reports/fixtures.js";

const GPT = "openai/gpt-4.1-mini";
const NOVA = "deepgram/nova-3";
const DETAIL_ID = "6f1d2c3b-8a9e-4b7c-9d0e-1f2a3b4c5d6e";

describe("dashboard API additions: whoami, series, log detail, calls, models", () => {
  const now = Date.now();
  const hourStart = (ago: number) => Math.floor((now - ago) / HOUR_MS) * HOUR_MS;

  const t = useTestApp({ yaml: `${REPORTS_YAML}\nmodels:\n  llm:\n    ${GPT}: { provider: openai, model: gpt-4.1-mini }\n` });
  beforeAll(async () => {
    const db = t.services.database.db;
    const acme = { tenant_id: "acme", project: "support" };
    await insertRequests(db, [
      row({ ...acme, now, agoMs: 10 * MIN, ttfb_ms: 100, total_latency_ms: 1000, cost_usd: "0.01" }),
      row({ ...acme, now, agoMs: 12 * MIN, ttfb_ms: 300, total_latency_ms: 3000, cost_usd: "0.02", status: "error", error_message: "upstream 500" }),
      row({ ...acme, now, agoMs: 3 * HOUR, ttfb_ms: 200, total_latency_ms: 2000, cost_usd: "0.04" }),
      row({ ...acme, now, agoMs: 3 * HOUR, ttfb_ms: 99_999, total_latency_ms: 99_999, cost_usd: "0.5", is_probe: true }),
      row({
        ...acme,
        id: DETAIL_ID,
        now,
        agoMs: 5 * HOUR,
        model_id: NOVA,
        modality: "stt",
        project: "sales",
        cost_usd: "0.0043",
        rated_price_usd: "0.00645",
        rate_rule: "cost_plus:1.5",
        audio_seconds: 60,
        status: "fallback",
        fallback_from: "openai/whisper-1",
        metadata: { call: "c-1" },
      }),
      row({ ...acme, now, agoMs: 3 * DAY, cost_usd: "1.5" }),
      row({ tenant_id: "globex", now, agoMs: HOUR, cost_usd: "9", project: "support" }),
    ]);
    await db.insert(calls).values([
      { roomSid: "RM_acme1", roomName: "room-acme-1", tenantId: "acme", channel: "sip", endReason: "USER_REJECTED", startedAtMs: now - HOUR, endedAtMs: now - HOUR + 90_000 },
      { roomSid: "RM_globex1", roomName: "room-globex-1", tenantId: "globex", channel: "webrtc", startedAtMs: now - 2 * HOUR },
    ]);
    await db.insert(callLegs).values([
      { participantSid: "PA_sip", roomSid: "RM_acme1", identity: "sip_+15550100", kind: "SIP", joinedAtMs: now - HOUR, disconnectReason: "USER_REJECTED" },
      { participantSid: "PA_agent", roomSid: "RM_acme1", identity: "agent-1", kind: "AGENT", joinedAtMs: now - HOUR + 500 },
    ]);
  });

  const get = async <T>(path: string, key: string = KEYS.acme, status = 200) => {
    const res = await t.call("GET", path, { key });
    expect(res.status, path).toBe(status);
    return (await res.json()) as T;
  };

  it("whoami names the key's scopes, tenant and what it can do, never the key", async () => {
    const acme = await get<Whoami>("/api/whoami");
    expect(acme).toMatchObject({ auth_enabled: true, authenticated: true, kind: "static", tenant_id: "acme", scopes: ["read"], can: { read: true, write: false, manage: false, admin: false } });
    expect(JSON.stringify(acme)).not.toContain(KEYS.acme);
    const ops = await get<Whoami>("/api/whoami", KEYS.ops);
    expect(ops).toMatchObject({ tenant_id: null, scopes: ["*"], can: { read: true, write: true, manage: true, admin: true } });
    const ingest = await get<Whoami>("/api/whoami", KEYS.ingestOnly);
    expect(ingest.can).toEqual({ read: false, write: false, manage: false, admin: false });
    const anonymous = await t.call("GET", "/api/whoami");
    expect(anonymous.status).toBe(200);
    expect(await anonymous.json()).toMatchObject({ auth_enabled: true, authenticated: false, tenant_id: null, scopes: [], can: { read: false, admin: false } });
    expect((await t.call("GET", "/api/whoami", { key: "wrong-key-0123456789" })).status).toBe(401);
  });

  it("cost series: one point per hour of the window from the rollups, the tenant's own spend only", async () => {
    const s = await get<CostSeries>("/api/costs/series?period=today");
    expect(s.bucket).toBe("hour");
    expect(s.points.length).toBeGreaterThanOrEqual(24);
    expect(s.points.length).toBeLessThanOrEqual(25);
    const at = (ms: number) => s.points.find((p) => p.t === new Date(ms).toISOString());
    // Probe traffic is spend too (costs count it; only latency leaves it out).
    expect(at(hourStart(3 * HOUR))).toMatchObject({ cost: 0.54, requests: 2, errors: 0 });
    const sum = s.points.reduce((a, p) => a + p.cost, 0);
    expect(Math.round(sum * 1e6) / 1e6).toBe(0.5743);
    const recent = [at(hourStart(10 * MIN)), at(hourStart(12 * MIN))];
    expect(recent.some((p) => (p?.errors ?? 0) === 1)).toBe(true);
    // Project filter and day buckets.
    const sales = await get<CostSeries>("/api/costs/series?period=week&project=sales&bucket=day");
    expect(sales.points.reduce((a, p) => a + p.cost, 0)).toBeCloseTo(0.0043, 10);
    const week = await get<CostSeries>("/api/costs/series?period=week&bucket=day");
    expect(week.points.length).toBeGreaterThanOrEqual(7);
    expect(week.points.reduce((a, p) => a + p.cost, 0)).toBeCloseTo(2.0743, 10);
    const all = await get<CostSeries>("/api/costs/series?period=all");
    expect(all.bucket).toBe("day");
    expect(all.points.reduce((a, p) => a + p.requests, 0)).toBe(6);
  });

  it("cost series refuses hour buckets over all time and unknown values (422)", async () => {
    await get("/api/costs/series?period=all&bucket=hour", KEYS.acme, 422);
    await get("/api/costs/series?bucket=minute", KEYS.acme, 422);
    await get("/api/costs/series?period=year", KEYS.acme, 422);
    await get("/api/costs/series", KEYS.ingestOnly, 403);
    expect((await t.call("GET", "/api/costs/series")).status).toBe(401);
  });

  it("latency series: p50/p95 per hour from the sketches, probes excluded, modality filter", async () => {
    const s = await get<LatencySeries>("/api/latency/series?period=today&modality=llm");
    const recent = s.points.filter((p) => p.requests > 0);
    const samples = recent.flatMap((p) => (p.p95_ttfb_ms === null ? [] : [p.p95_ttfb_ms]));
    expect(Math.max(...samples)).toBeLessThan(1000);
    const three = s.points.find((p) => p.t === new Date(hourStart(3 * HOUR)).toISOString());
    expect(three).toMatchObject({ requests: 1, p95_ttfb_ms: summarizeSamples([200])?.p95 });
    const stt = await get<LatencySeries>("/api/latency/series?period=today&modality=stt");
    expect(stt.points.every((p) => p.p95_ttfb_ms === null)).toBe(true);
    await get("/api/latency/series?period=all", KEYS.acme, 422);
  });

  it("logs filter by status; a row's detail carries units, pricing, fallback and metadata", async () => {
    const errors = await get<RequestLogRecord[]>("/api/logs?status=error");
    expect(errors.map((r) => r.status)).toEqual(["error"]);
    await get("/api/logs?status=broken", KEYS.acme, 422);
    const d = await get<RequestLogDetail>(`/api/logs/${DETAIL_ID}`);
    expect(d).toMatchObject({
      id: DETAIL_ID,
      model_id: NOVA,
      status: "fallback",
      fallback_from: "openai/whisper-1",
      cost_usd: 0.0043,
      rated_price_usd: 0.00645,
      rate_rule: "cost_plus:1.5",
      metadata: { call: "c-1" },
    });
    expect(d.units.audio_seconds).toBe(60);
    // Another tenant's row answers like a missing one; a malformed id too.
    await get(`/api/logs/${DETAIL_ID}`, KEYS.globex, 404);
    await get("/api/logs/not-a-uuid", KEYS.acme, 404);
  });

  it("calls list and detail: legs, SIP status, disconnect reasons; tenant-scoped", async () => {
    const list = await get<CallRow[]>("/api/calls");
    expect(list.map((c) => c.room_sid)).toEqual(["RM_acme1"]);
    expect(list[0]).toMatchObject({ channel: "sip", end_reason: "USER_REJECTED", leg_count: 2, disconnect_reasons: ["USER_REJECTED"] });
    const ops = await get<CallRow[]>("/api/calls", KEYS.ops);
    expect(ops.map((c) => c.room_sid)).toEqual(["RM_acme1", "RM_globex1"]);
    const detail = await get<CallDetail>("/api/calls/room-acme-1");
    expect(detail.legs.map((l) => l.kind)).toEqual(["SIP", "AGENT"]);
    await get("/api/calls/RM_globex1", KEYS.acme, 404);
    await get("/api/calls?limit=0", KEYS.acme, 422);
  });

  it("models list with source", async () => {
    const body = await get<{ models: { model_id: string; source: string }[] }>("/api/models");
    expect(body.models).toContainEqual(expect.objectContaining({ model_id: GPT, source: "yaml" }));
  });
});

describe("GET /api/latency/modalities", () => {
  it("merges the models' sketches per modality, probes excluded", async () => {
    const t = await createTestApp({ yaml: REPORTS_YAML });
    try {
      await insertRequests(t.services.database.db, [
        row({ tenant_id: "acme", agoMs: 10 * MIN, ttfb_ms: 100 }),
        row({ tenant_id: "acme", agoMs: 20 * MIN, ttfb_ms: 300, model_id: "groq/llama" }),
        row({ tenant_id: "acme", agoMs: 30 * MIN, ttfb_ms: 50_000, is_probe: true }),
        row({ tenant_id: "acme", agoMs: 40 * MIN, ttfb_ms: 80, modality: "stt", model_id: NOVA }),
      ]);
      const res = await t.call("GET", "/api/latency/modalities", { key: KEYS.acme });
      expect(res.status).toBe(200);
      const body = (await res.json()) as import("../../src/dashboard/modality-latency.js").ModalityLatencyReport;
      expect(body.modalities.llm).toMatchObject({ requests: 2, p95_ttfb_ms: summarizeSamples([100, 300])?.p95 });
      expect(body.modalities.stt?.p50_ttfb_ms).toBe(summarizeSamples([80])?.p50);
    } finally {
      await t.close();
    }
  });
});
