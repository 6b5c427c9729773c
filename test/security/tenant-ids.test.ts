import { randomUUID } from "node:crypto";
import { sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { useTestApp } from "../support/app.js";
import { KEYS, LIVEKIT_ENV } from "../support/fixtures.js";
import { signBody } from "../calls/support.js";
import { http, json } from "./http.js";

// No tenant can squat, probe-mark or show up in another tenant's identifiers.
const OPERATOR = KEYS.ops;
const A = "tenant-a-writer-key-0123456789";
const B = "tenant-b-writer-key-0123456789";
const yaml = `
auth:
  api_keys:
    - ${KEYS.ops}
    - { key: ${A}, scopes: [read, write], tenant_id: a }
    - { key: ${B}, scopes: [read, write], tenant_id: b }
`;

const record = (o: Record<string, unknown> = {}) => ({
  id: randomUUID(),
  timestamp: new Date(Date.now() - 60_000).toISOString(),
  modality: "llm",
  model_id: "openai/gpt-4.1-mini",
  input_tokens: 100,
  output_tokens: 20,
  cost_usd: 0.01,
  ttfb_ms: 300,
  ...o,
});
const turn = (session_id: string, turn_index: number, speed: number) => {
  const at = Date.now() - 30_000;
  return { session_id, turn_index, caller_speak_start_ms: at, caller_speak_end_ms: at + 1000, agent_speak_start_ms: at + 1000 + speed, response_speed_ms: speed };
};

interface Answer {
  accepted: number;
  duplicates: number;
}

describe("tenant-scoped identifiers", () => {
  const t = useTestApp({ yaml, env: LIVEKIT_ENV });

  it("a session id another tenant used first is still the second tenant's own session", async () => {
    const id = "room-b-2-session";
    await json(http(t, "POST", "/v1/ingest", { key: A, body: [record({ session_id: id, cost_usd: 9 })] }), 200);
    await json(http(t, "POST", "/v1/ingest", { key: B, body: [record({ session_id: id, cost_usd: 0.25 }), record({ session_id: id, cost_usd: 0.25 })] }), 200);
    const mine = await json<{ id: string; tenant_id: string; request_count: number; total_cost_usd: number }>(http(t, "GET", `/v1/sessions/${id}`, { key: B }), 200);
    expect(mine).toMatchObject({ id, tenant_id: "b", request_count: 2, total_cost_usd: 0.5 });
    const list = await json<{ id: string }[]>(http(t, "GET", "/v1/sessions", { key: B }), 200);
    expect(list.map((s) => s.id)).toContain(id);
  });

  it("a turn or dead-air event another tenant posted under the same key does not make the real one a duplicate", async () => {
    const id = "b-session-turns";
    expect((await json<Answer>(http(t, "POST", "/v1/ingest/turns", { key: A, body: [turn(id, 1, 9999)] }), 200)).accepted).toBe(1);
    const mine = turn(id, 1, 640);
    const real = await json<Answer>(http(t, "POST", "/v1/ingest/turns", { key: B, body: [mine] }), 200);
    expect(real).toMatchObject({ accepted: 1, duplicates: 0 });
    // Idempotency still holds within the tenant: a retry re-sends the same turn (its start time is part of the
    // dedup key since turns are day-partitioned by it; docs/operations.md "Day partitions").
    expect((await json<Answer>(http(t, "POST", "/v1/ingest/turns", { key: B, body: [mine] }), 200)).duplicates).toBe(1);

    const at = Date.now() - 20_000;
    const dead = { session_id: id, started_at_ms: at, duration_ms: 4000, threshold_used_ms: 3000 };
    expect((await json<Answer>(http(t, "POST", "/v1/ingest/dead-air", { key: A, body: [{ ...dead, duration_ms: 99_000 }] }), 200)).accepted).toBe(1);
    expect(await json<Answer>(http(t, "POST", "/v1/ingest/dead-air", { key: B, body: [dead] }), 200)).toMatchObject({ accepted: 1, duplicates: 0 });
  });

  it("re-sending another tenant's request id is no oracle: it is the sender's own new record", async () => {
    const rec = record();
    expect((await json<Answer>(http(t, "POST", "/v1/ingest", { key: B, body: [rec] }), 200)).accepted).toBe(1);
    expect(await json<Answer>(http(t, "POST", "/v1/ingest", { key: A, body: [rec] }), 200)).toMatchObject({ accepted: 1, duplicates: 0 });
    expect((await json<Answer>(http(t, "POST", "/v1/ingest", { key: A, body: [rec] }), 200)).duplicates).toBe(1);
    const rows = (await t.services.database.db.execute(sql`select tenant_id from requests where id = ${rec.id} order by tenant_id`)) as unknown as { rows: { tenant_id: string }[] };
    expect(rows.rows.map((r) => r.tenant_id)).toEqual(["a", "b"]);
  });

  it("operators address a session id two tenants used with ?tenant= (409 without it, naming the tenants)", async () => {
    const id = "room-b-2-session";
    const ambiguous = await json<{ error: { code: string; details: { tenants: (string | null)[] } } }>(http(t, "GET", `/v1/sessions/${id}`, { key: OPERATOR }), 409);
    expect(ambiguous.error.details.tenants).toEqual(["a", "b"]);
    expect((await json<{ tenant_id: string }>(http(t, "GET", `/v1/sessions/${id}?tenant=b`, { key: OPERATOR }), 200)).tenant_id).toBe("b");
    expect((await json<{ tenant_id: string }>(http(t, "GET", `/api/sessions/${id}?tenant=a`, { key: OPERATOR }), 200)).tenant_id).toBe("a");
    expect((await http(t, "GET", `/v1/sessions/${id}?tenant=`, { key: OPERATOR })).status).toBe(404);
    // A tenant key cannot use the parameter to reach another tenant.
    expect((await http(t, "GET", `/v1/sessions/${id}?tenant=a`, { key: B })).status).toBe(404);
  });

  it("a webhook call gets a tenant only by room_sid, is never re-assigned, and never by room name", async () => {
    const event = { event: "room_started", room: { sid: "RM_tenancy01", name: "shared-name" }, id: "EV_tenancy01", createdAt: String(Math.floor(Date.now() / 1000)) };
    const raw = JSON.stringify(event);
    const hook = await http(t, "POST", "/v1/livekit/webhook", { raw, headers: { authorization: await signBody(raw), "content-type": "application/webhook+json" } });
    expect(hook.status).toBe(200);
    const observe = (key: string, body: Record<string, unknown>) => http(t, "POST", "/v1/calls/observations", { key, body });
    // By room name only (an attempt id): a separate call of a's own, the webhook's call untouched.
    expect((await observe(A, { origin: "agent", attempt_id: "att-1", room_name: "shared-name" })).status).toBe(202);
    expect((await observe(B, { origin: "agent", room_sid: "RM_tenancy01", agent_id: "b-agent" })).status).toBe(202);
    expect((await observe(A, { origin: "agent", room_sid: "RM_tenancy01", agent_id: "a-agent" })).status).toBe(202);
    await t.services.callObservations.flushed();
    const calls = (await t.services.database.db.execute(
      sql`select room_sid, tenant_id, agent_id from calls where room_name = 'shared-name' order by room_sid`,
    )) as unknown as { rows: { room_sid: string; tenant_id: string | null; agent_id: string | null }[] };
    expect(calls.rows).toEqual([
      { room_sid: "RM_tenancy01", tenant_id: "b", agent_id: "b-agent" },
      { room_sid: "attempt:a:att-1", tenant_id: "a", agent_id: null },
    ]);
  });
});

describe("probe marking stays in its tenant", () => {
  const t = useTestApp({ yaml });

  const ttfbSamples = async (key: string) => {
    const report = await json<{ models: Record<string, { ttfb_samples: number }> }>(http(t, "GET", "/v1/latency", { key }), 200);
    return report.models["openai/gpt-4.1-mini"]?.ttfb_samples ?? 0;
  };

  it("another tenant's loadgen call in a room of the same name hides none of this tenant's latency", async () => {
    // a marks "room-b-3" as probe with a call of its own, before and after b's records arrive.
    const before = await http(t, "POST", "/v1/calls/observations", { key: A, body: { origin: "loadgen", room_sid: "RM_a_own_1", room_name: "room-b-3" } });
    expect(before.status).toBe(202);
    await t.services.callObservations.flushed();
    await json(http(t, "POST", "/v1/ingest", { key: B, body: [record({ room_name: "room-b-3", session_id: "b3", ttfb_ms: 420 })] }), 200);
    await json(http(t, "POST", "/v1/ingest", { key: B, body: [record({ room_name: "room-b-4", session_id: "b4", ttfb_ms: 440 })] }), 200);
    await http(t, "POST", "/v1/calls/observations", { key: A, body: { origin: "loadgen", room_sid: "RM_a_own_2", room_name: "room-b-4" } });
    await t.services.callObservations.flushed();

    const probe = (await t.services.database.db.execute(sql`select count(*)::int as n from requests where tenant_id = 'b' and is_probe`)) as unknown as { rows: { n: number }[] };
    expect(probe.rows[0]?.n).toBe(0);
    expect(await ttfbSamples(B)).toBe(2);
    // a's own records in its probe room are probe (its load test stays out of its percentiles).
    await json(http(t, "POST", "/v1/ingest", { key: A, body: [record({ room_name: "room-b-3", session_id: "a3" })] }), 200);
    const aProbe = (await t.services.database.db.execute(sql`select count(*)::int as n from requests where tenant_id = 'a' and is_probe`)) as unknown as { rows: { n: number }[] };
    expect(aProbe.rows[0]?.n).toBe(1);
  });
});

describe("the operator's session view shows the session's own tenant only", () => {
  const t = useTestApp({ yaml });

  it("rows another tenant filed under the same session id never appear in its detail or drill-downs", async () => {
    const id = "b-call-42";
    await json(http(t, "POST", "/v1/ingest", { key: B, body: [record({ session_id: id, modality: "stt", model_id: "deepgram/nova-3", audio_seconds: 30, cost_usd: 0.01 })] }), 200);
    await json(http(t, "POST", "/v1/ingest/turns", { key: B, body: [turn(id, 0, 700)] }), 200);
    await json(http(t, "POST", "/v1/ingest", { key: A, body: [record({ session_id: id, model_id: "evil/injected", cost_usd: 50 })] }), 200);
    await json(http(t, "POST", "/v1/ingest/turns", { key: A, body: [turn(id, 1, 99_999)] }), 200);

    const detail = await json<{ tenant_id: string; by_modality: Record<string, unknown>; providers: string[] }>(
      http(t, "GET", `/v1/sessions/${id}?tenant=b`, { key: OPERATOR }),
      200,
    );
    expect(detail.tenant_id).toBe("b");
    expect(Object.keys(detail.by_modality)).toEqual(["stt"]);
    expect(detail.providers).toEqual(["deepgram"]);
    const turns = await json<{ turn_index: number }[]>(http(t, "GET", `/api/sessions/${id}/turns?tenant=b`, { key: OPERATOR }), 200);
    expect(turns.map((x) => x.turn_index)).toEqual([0]);
    const replay = JSON.stringify(await json(http(t, "GET", `/api/sessions/${id}/replay?tenant=b`, { key: OPERATOR }), 200));
    expect(replay).not.toContain("evil/injected");
    expect(replay).not.toContain("99999");
    // b's own key sees the same.
    const own = await json<{ turn_index: number }[]>(http(t, "GET", `/api/sessions/${id}/turns`, { key: B }), 200);
    expect(own.map((x) => x.turn_index)).toEqual([0]);
  });
});
