import { sql } from "drizzle-orm";
import { afterEach, describe, expect, it } from "vitest";
import { EPOCH_MS_MAX, EPOCH_MS_MIN, MAX_LEGS_PER_OBSERVATION, OBSERVATION_QUEUE_LIMIT } from "../../src/calls/limits.js";
import { createTestApp, useTestApp } from "../support/app.js";
import { authYaml, KEYS, LIVEKIT_ENV } from "../support/fixtures.js";
import { callRow, countOf, exampleEvents, legRow, postWebhook, rows } from "./support.js";

const OPS = KEYS.ops;
const INGEST_A = KEYS.acmeIngest;
const WRITE_A = KEYS.acmeWriter;
const READ_A = KEYS.acmeReader;
const INGEST_B = KEYS.globexIngest;

const yaml = authYaml("ops", "acmeIngest", "acmeWriter", "acmeReader", "globexIngest");

const T0 = 1767225600000;

interface Counters {
  status: string;
  queued: number;
  dropped: number;
  queue_depth: number;
}

describe("POST /v1/calls/observations", () => {
  const post = (body: unknown, key = INGEST_A) => t.call("POST", "/v1/calls/observations", { key, body });
  const flushed = () => t.services.callObservations.flushed();

  const t = useTestApp({ yaml, env: LIVEKIT_ENV });
  afterEach(() => {
    delete process.env.VOXGATE_DISABLE_CALL_OBSERVATIONS;
    t.services.callObservations.resume();
  });

  it("queues a valid report with 202 and counters, then writes it with the key's tenant", async () => {
    const report = {
      origin: "agent",
      room_sid: "RM_obs1",
      room_name: "call-obs1",
      attempt_id: "att-1",
      run_id: "run-1",
      project: "support",
      agent_id: "agent-7",
      started_at_ms: T0,
      ended_at_ms: T0 + 90_000,
      legs: [
        { participant_sid: "PA_obs1_sip", identity: "sip_+1555", kind: "SIP", joined_at_ms: T0 + 1000, left_at_ms: T0 + 89_000, disconnect_reason: "USER_UNAVAILABLE", first_audio_track_at_ms: T0 + 1500.4, audio_track_sid: "TR_1", audio_codec: "opus" },
        { participant_sid: "PA_obs1_agent", identity: "agent", kind: "AGENT", joined_at_ms: T0 + 500 },
      ],
    };
    const res = await post(report);
    expect(res.status).toBe(202);
    const body = (await res.json()) as Counters;
    expect(body.status).toBe("queued");
    expect(typeof body.queued).toBe("number");
    expect(typeof body.dropped).toBe("number");
    expect(typeof body.queue_depth).toBe("number");
    await flushed();
    const call = await callRow(t, "RM_obs1");
    expect(call).toMatchObject({ tenant_id: "acme", origin: "agent", project: "support", agent_id: "agent-7", attempt_id: "att-1", run_id: "run-1", channel: "sip", end_reason: "USER_UNAVAILABLE", is_probe: false });
    expect(Number(call?.started_at_ms)).toBe(T0);
    expect(Number(call?.ended_at_ms)).toBe(T0 + 90_000);
    const leg = await legRow(t, "PA_obs1_sip");
    expect(leg).toMatchObject({ kind: "SIP", state: "DISCONNECTED", audio_track_sid: "TR_1", audio_codec: "opus" });
    expect(Number(leg?.first_audio_track_at_ms)).toBe(T0 + 1500);

    // Re-sent: a no-op (same rows, no extra call).
    const calls = await countOf(t, "calls");
    expect((await post(report)).status).toBe(202);
    await flushed();
    expect(await countOf(t, "calls")).toBe(calls);
    const again = await callRow(t, "RM_obs1");
    expect({ ...again, updated_at: null }).toEqual({ ...call, updated_at: null });
  });

  it("derives channel webrtc without a SIP leg (the same rule as the webhook)", async () => {
    expect((await post({ origin: "agent", room_sid: "RM_obs_web", legs: [{ participant_sid: "PA_w1", kind: "STANDARD", left_at_ms: T0, disconnect_reason: "CLIENT_INITIATED" }] })).status).toBe(202);
    await flushed();
    expect(await callRow(t, "RM_obs_web")).toMatchObject({ channel: "webrtc", end_reason: null });
  });

  it("merges with the webhook's rows for the same room, in either order, and claims the tenantless call", async () => {
    const ev = exampleEvents("RM_merge", "call-merge", "ST_prod");
    expect((await postWebhook(t, ev.sipJoined)).status).toBe(200);
    expect((await post({ origin: "agent", room_sid: "RM_merge", agent_id: "agent-9", legs: [{ participant_sid: ev.sip, first_audio_track_at_ms: 1767225602500, audio_track_sid: "TR_agent_view" }] })).status).toBe(202);
    await flushed();
    expect((await postWebhook(t, ev.sipLeft)).status).toBe(200);
    const call = await callRow(t, "RM_merge");
    expect(call).toMatchObject({ tenant_id: "acme", origin: "webhook", agent_id: "agent-9", channel: "sip", end_reason: "USER_REJECTED", room_name: "call-merge" });
    const leg = await legRow(t, ev.sip);
    expect(leg).toMatchObject({ kind: "SIP", identity: "sip_+15105550100", audio_track_sid: "TR_agent_view" });
    expect(Number(leg?.joined_at_ms)).toBe(1767225602123);
  });

  it("keys attempt-only reports per tenant", async () => {
    expect((await post({ origin: "loadgen", attempt_id: "att-shared", run_id: "run-a" })).status).toBe(202);
    expect((await post({ origin: "loadgen", attempt_id: "att-shared", run_id: "run-b" }, INGEST_B)).status).toBe(202);
    await flushed();
    const r = await rows<{ tenant_id: string; run_id: string; is_probe: boolean }>(t, sql`select tenant_id, run_id, is_probe from calls where attempt_id = 'att-shared' order by tenant_id`);
    expect(r).toEqual([
      { tenant_id: "acme", run_id: "run-a", is_probe: true },
      { tenant_id: "globex", run_id: "run-b", is_probe: true },
    ]);
  });

  describe("validation (422 names the field; nothing queued)", () => {
    const expect422 = async (body: unknown, field?: string) => {
      const before = t.services.callObservations.counters().queued;
      const res = await post(body);
      expect(res.status).toBe(422);
      const err = ((await res.json()) as { error: { code: string; message: string; details: { path: string; message: string }[] } }).error;
      expect(err.code).toBe("validation_failed");
      if (field) expect(JSON.stringify(err)).toContain(field);
      expect(t.services.callObservations.counters().queued).toBe(before);
    };

    it("rejects unknown fields at top level and per leg, naming them", async () => {
      for (const f of ["tenant_id", "is_probe", "loss", "jitter", "mos", "dtmf", "sip_response_code"]) {
        await expect422({ origin: "agent", room_sid: "RM_v", [f]: f === "tenant_id" ? "globex" : 1 }, f);
      }
      await expect422({ origin: "agent", room_sid: "RM_v", legs: [{ participant_sid: "PA_v", jitter_ms: 3 }] }, "jitter_ms");
      const res = await post({ origin: "agent", room_sid: "RM_v", mos: 4.1, legs: [{ participant_sid: "PA_v", loss_pct: 1 }] });
      const err = ((await res.json()) as { error: { message: string; details: { path: string; message: string }[] } }).error;
      expect(err.message).toContain("mos");
      expect(err.details).toEqual(expect.arrayContaining([{ path: "mos", message: "unknown field" }, { path: "legs.0.loss_pct", message: "unknown field" }]));
      await expect422({ origin: "agent", room_sid: "RM_v", legs: [{ participant_sid: "PA_v", attributes: { "sip.trunkID": "x" } }] }, "attributes");
    });

    it("requires origin agent|loadgen and room_sid or attempt_id", async () => {
      await expect422({ room_sid: "RM_v" }, "origin");
      await expect422({ origin: "webhook", room_sid: "RM_v" }, "origin");
      await expect422({ origin: "agent" }, "room_sid");
      await expect422({ origin: "agent", room_sid: "" }, "room_sid");
      await expect422({ origin: "agent", room_sid: 42 }, "room_sid");
      await expect422({ origin: "agent", room_sid: "RM_v", legs: [{ identity: "no sid" }] }, "participant_sid");
      await expect422({ origin: "agent", room_sid: "RM_v", legs: [{ participant_sid: "PA_v", kind: "ROBOT" }] }, "kind");
      await expect422([], undefined);
      await expect422("report", undefined);
    });

    it(`accepts ${MAX_LEGS_PER_OBSERVATION} legs and refuses ${MAX_LEGS_PER_OBSERVATION + 1}`, async () => {
      const legs = (n: number) => Array.from({ length: n }, (_, i) => ({ participant_sid: `PA_many_${i}` }));
      expect((await post({ origin: "agent", room_sid: "RM_legs", legs: legs(MAX_LEGS_PER_OBSERVATION) })).status).toBe(202);
      await expect422({ origin: "agent", room_sid: "RM_legs", legs: legs(MAX_LEGS_PER_OBSERVATION + 1) }, "legs");
      await expect422({ origin: "agent", room_sid: "RM_legs", legs: legs(10_000) }, "legs");
      await expect422({ origin: "agent", room_sid: "RM_legs", legs: [{ participant_sid: "PA_dup" }, { participant_sid: "PA_dup" }] }, "legs");
    });

    it("accepts epoch ms in [1e12, 1e13) and refuses seconds, microseconds, negatives and non-numbers", async () => {
      expect((await post({ origin: "agent", room_sid: "RM_ts", started_at_ms: EPOCH_MS_MIN })).status).toBe(202);
      expect((await post({ origin: "agent", room_sid: "RM_ts", ended_at_ms: EPOCH_MS_MAX - 1 })).status).toBe(202);
      for (const v of [1767225600, 1767225600.5, 1767225600000000, EPOCH_MS_MIN - 1, EPOCH_MS_MAX, -T0, 0, "1767225600000", null, true, 1e308]) {
        await expect422({ origin: "agent", room_sid: "RM_ts", started_at_ms: v }, "started_at_ms");
        await expect422({ origin: "agent", room_sid: "RM_ts", legs: [{ participant_sid: "PA_ts", joined_at_ms: v }] }, "joined_at_ms");
      }
      await expect422({ origin: "agent", room_sid: "RM_ts", started_at_ms: T0 + 10, ended_at_ms: T0 }, "ended_at_ms");
      await expect422({ origin: "agent", room_sid: "RM_ts", legs: [{ participant_sid: "PA_ts", joined_at_ms: T0 + 10, left_at_ms: T0 }] }, "left_at_ms");
    });

    it("malformed JSON and NaN are 400", async () => {
      for (const raw of ["{", "NaN", '{"origin":"agent","room_sid":"RM_n","started_at_ms":NaN}', ""]) {
        const res = await t.call("POST", "/v1/calls/observations", { key: INGEST_A, raw, headers: { "content-type": "application/json" } });
        expect(res.status).toBe(400);
      }
    });
  });

  describe("auth and tenancy", () => {
    it("needs a key with the ingest (or write) scope", async () => {
      const body = { origin: "agent", room_sid: "RM_auth" };
      expect((await t.call("POST", "/v1/calls/observations", { body })).status).toBe(401);
      expect((await post(body, "wrong-key-0123456789")).status).toBe(401);
      expect((await post(body, READ_A)).status).toBe(403);
      expect((await post(body, WRITE_A)).status).toBe(202);
      expect((await post(body, OPS)).status).toBe(202);
    });

    it("a tenant can never create or change another tenant's call", async () => {
      expect((await post({ origin: "agent", room_sid: "RM_owned", project: "acme-proj", agent_id: "acme-agent", legs: [{ participant_sid: "PA_owned", identity: "acme-user", kind: "SIP", disconnect_reason: "USER_REJECTED" }] })).status).toBe(202);
      await flushed();
      const before = await callRow(t, "RM_owned");
      const legBefore = await legRow(t, "PA_owned");
      // globex reports on acme's room: accepted for the queue (no database wait), then not applied.
      expect((await post({ origin: "agent", room_sid: "RM_owned", project: "evil", ended_at_ms: T0, started_at_ms: T0 - 5000, legs: [{ participant_sid: "PA_owned", identity: "evil", disconnect_reason: "SIP_TRUNK_FAILURE" }, { participant_sid: "PA_evil_new", kind: "AGENT" }] }, INGEST_B)).status).toBe(202);
      // globex reuses acme's participant sid under its own room: acme's leg is not moved or changed.
      expect((await post({ origin: "agent", room_sid: "RM_globex", legs: [{ participant_sid: "PA_owned", identity: "evil2", kind: "AGENT" }] }, INGEST_B)).status).toBe(202);
      await flushed();
      expect(await callRow(t, "RM_owned")).toEqual(before);
      expect(await legRow(t, "PA_owned")).toEqual(legBefore);
      expect(await legRow(t, "PA_evil_new")).toBeUndefined();
      expect(await callRow(t, "RM_globex")).toMatchObject({ tenant_id: "globex", channel: null });
    });
  });

  it("answers 503 and queues nothing while VOXGATE_DISABLE_CALL_OBSERVATIONS is set (read per request)", async () => {
    const body = { origin: "agent", room_sid: "RM_disabled" };
    for (const v of ["1", "true", "yes"]) {
      process.env.VOXGATE_DISABLE_CALL_OBSERVATIONS = v;
      const before = t.services.callObservations.counters();
      const res = await post(body);
      expect(res.status).toBe(503);
      expect(((await res.json()) as { error: { code: string } }).error.code).toBe("unavailable");
      expect(t.services.callObservations.counters()).toEqual(before);
    }
    for (const v of ["0", "false", "off", "no"]) {
      process.env.VOXGATE_DISABLE_CALL_OBSERVATIONS = v;
      expect((await post(body)).status).toBe(202);
    }
    delete process.env.VOXGATE_DISABLE_CALL_OBSERVATIONS;
    expect((await post(body)).status).toBe(202);
  });

  it(`holds ${OBSERVATION_QUEUE_LIMIT} reports, drops the ${OBSERVATION_QUEUE_LIMIT + 1}st with 429, then writes them all`, async () => {
    const q = t.services.callObservations;
    await q.flushed();
    q.pause();
    const start = q.counters();
    expect(start.queue_depth).toBe(0);
    for (let i = 0; i < OBSERVATION_QUEUE_LIMIT; i++) {
      const res = await post({ origin: "loadgen", room_sid: `RM_q_${i}`, started_at_ms: T0 + i });
      expect(res.status).toBe(202);
      if (i === OBSERVATION_QUEUE_LIMIT - 1) {
        expect(await res.json()).toEqual({ status: "queued", queued: start.queued + OBSERVATION_QUEUE_LIMIT, dropped: start.dropped, queue_depth: OBSERVATION_QUEUE_LIMIT });
      }
    }
    const full = await post({ origin: "loadgen", room_sid: "RM_q_overflow" });
    expect(full.status).toBe(429);
    const body = (await full.json()) as Counters & { error: { code: string } };
    expect(body.error.code).toBe("too_many_requests");
    expect(body).toMatchObject({ status: "dropped", queued: start.queued + OBSERVATION_QUEUE_LIMIT, dropped: start.dropped + 1, queue_depth: OBSERVATION_QUEUE_LIMIT });
    q.resume();
    await q.flushed();
    expect(q.counters().queue_depth).toBe(0);
    const written = await rows<{ n: string }>(t, sql`select count(*) as n from calls where room_sid like 'RM_q_%'`);
    expect(Number(written[0]?.n)).toBe(OBSERVATION_QUEUE_LIMIT);
    expect(await callRow(t, "RM_q_overflow")).toBeUndefined();
  });

  it("a database failure is retried with backoff, not lost", async () => {
    const q = t.services.callObservations;
    q.pause();
    expect((await post({ origin: "agent", room_sid: "RM_retry" })).status).toBe(202);
    const db = t.services.database.db;
    await db.execute(sql`alter table call_legs rename to call_legs_away`);
    await db.execute(sql`alter table calls rename to calls_away`);
    const retriesBefore = q.stats().retries;
    q.resume();
    // Wait (no sleep) until the flusher has failed once and scheduled its retry.
    while (q.stats().retries === retriesBefore) await new Promise((r) => setImmediate(r));
    expect(q.counters().queue_depth).toBe(1);
    await db.execute(sql`alter table calls_away rename to calls`);
    await db.execute(sql`alter table call_legs_away rename to call_legs`);
    await q.flushed();
    expect(q.counters().queue_depth).toBe(0);
    expect(await callRow(t, "RM_retry")).toMatchObject({ tenant_id: "acme" });
  });
});

describe("shutdown drains the observation queue", () => {
  it("stopWorkers writes every queued report, then new reports get 503", async () => {
    const t = await createTestApp({ yaml });
    let closed = false;
    try {
      const q = t.services.callObservations;
      q.pause();
      for (let i = 0; i < 50; i++) {
        expect((await t.call("POST", "/v1/calls/observations", { key: INGEST_A, body: { origin: "agent", room_sid: `RM_drain_${i}` } })).status).toBe(202);
      }
      expect(q.counters().queue_depth).toBe(50);
      expect(await countOf(t, "calls")).toBe(0);
      const { stopWorkers } = await import("../../src/compose.js");
      await stopWorkers(t.services);
      expect(q.counters().queue_depth).toBe(0);
      expect(await countOf(t, "calls")).toBe(50);
      const late = await t.call("POST", "/v1/calls/observations", { key: INGEST_A, body: { origin: "agent", room_sid: "RM_late" } });
      expect(late.status).toBe(503);
      await t.close();
      closed = true;
    } finally {
      if (!closed) await t.close();
    }
  });
});
