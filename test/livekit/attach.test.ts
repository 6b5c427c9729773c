import { EventEmitter } from "node:events";
import { createServer } from "node:net";
import { sql } from "drizzle-orm";
import { afterAll, describe, expect, it } from "vitest";
import { attach, closeAttachClients, trackInstance } from "../../src/livekit/index.js";
import { KEYS_YAML, OPERATOR_KEY, recordedRows } from "../gateway/support.js";
import { rows } from "../ingest/helpers.js";
import { useTestApp } from "../support/app.js";
import { EXPECTED, newSession, play, threeTurnCall } from "./sequences.js";

/**
 * attach() driven by recorded AgentSession event sequences, pushing to a real collector (a Voxgate
 * on loopback): the exact turns, dead-air rows and request records it stores; components that went
 * through the gateway are not recorded again; nothing reaches the voice loop when the collector is down.
 */
const YAML = `${KEYS_YAML}
pricing:
  catalog:
    cartesia/sonic-2: { price_usd: 0.03 }
`;

const app = useTestApp({ yaml: YAML, listen: true });
const host = () => new URL(app.base).host;
// Registered after the app's hooks, so it runs before the app closes.
afterAll(async () => {
  await closeAttachClients();
});

const T0 = 1_790_000_000_000;

async function sessionRows(sessionId: string) {
  const db = app.services.database.db;
  const turns = await rows<Record<string, number | string | null>>(
    db,
    sql`SELECT turn_index, caller_speak_start_ms - ${T0} AS caller_speak_start_ms, caller_speak_end_ms - ${T0} AS caller_speak_end_ms,
               agent_speak_start_ms - ${T0} AS agent_speak_start_ms, agent_speak_end_ms - ${T0} AS agent_speak_end_ms, response_speed_ms, room_name
          FROM turns WHERE session_id = ${sessionId} ORDER BY turn_index`,
  );
  const deadAir = await rows<Record<string, number | string | null>>(
    db,
    sql`SELECT started_at_ms - ${T0} AS started_at_ms, duration_ms, threshold_used_ms, room_name FROM dead_air_events WHERE session_id = ${sessionId} ORDER BY started_at_ms`,
  );
  const requests = (await recordedRows(app)).filter((r) => r.session_id === sessionId);
  return { turns: turns.map(numeric), deadAir: deadAir.map(numeric), requests };
}

const numeric = (r: Record<string, number | string | null>) =>
  Object.fromEntries(Object.entries(r).map(([k, v]) => [k, typeof v === "string" && /^-?\d+$/.test(v) ? Number(v) : v]));

describe("attach() on a three-turn call", () => {
  it("stores exactly its turns, its dead air and the records of the components that bypassed the gateway", async () => {
    const session = newSession();
    const handle = attach(session, {
      collectorUrl: app.base,
      apiKey: OPERATOR_KEY,
      project: "att-proj",
      sessionId: "att-call-1",
      roomName: "room-att-1",
      deadAirThresholdMs: 2000,
    });
    play(session, threeTurnCall(host()), T0);
    await handle.flush();
    expect(session.listenerCount("user_state_changed")).toBe(0); // close detached it

    const got = await sessionRows("att-call-1");
    expect(got.turns).toEqual(EXPECTED.turns.map((t) => ({ ...t, room_name: "room-att-1" })));
    expect(got.deadAir).toEqual(EXPECTED.deadAir.map((d) => ({ ...d, room_name: "room-att-1" })));

    const byKind = got.requests.map((r) => [r.model_id, r.status, r.audio_seconds ?? r.characters ?? null]);
    expect(byKind).toEqual([
      ["deepgram/nova-3", "success", 1.5],
      ["cartesia/sonic-2", "success", 40],
      ["openai/gpt-4.1-mini", "error", null],
      ["cartesia/sonic-2", "success", 25],
    ]);
    const [stt, tts] = got.requests;
    // Priced by the collector: nova-3 $0.0077/min × 1.5 s; sonic-2 $0.03/1k characters × 40.
    expect(stt).toMatchObject({ project: "att-proj", provider: "deepgram", cost_usd: "0.0001925000" });
    expect(tts).toMatchObject({ cost_usd: "0.0012000000", ttfb_ms: 120, total_latency_ms: 800 });
    expect(got.requests[2]?.error_message).toBe("connection reset by peer");
    expect(stt?.metadata).toMatchObject({ source: "livekit", turn_index: 0 });

    expect(handle.stats()).toMatchObject({ turns: 3, deadAir: 1, records: 4, skippedGateway: 2, internalErrors: 0 });
    expect(handle.stats().client.dropped).toBe(0);
  });

  it("records nothing twice: metrics of a gateway-built instance (tracked) and of a modality declared viaGateway are skipped", async () => {
    const component = trackInstance(new EventEmitter()); // stands in for a plugin instance voxgateGateway built
    const session = newSession();
    // What LiveKit's AgentActivity does: the component's metrics object goes on to the session as is.
    component.on("metrics_collected", (m: object) => session.emit("metrics_collected", { metrics: m, createdAt: T0 }));
    const handle = attach(session, { collectorUrl: app.base, apiKey: OPERATOR_KEY, sessionId: "att-call-2", viaGateway: ["stt"] });
    component.emit("metrics_collected", { type: "tts_metrics", label: "cartesia.TTS", timestamp: T0, charactersCount: 10, metadata: { modelProvider: "Cartesia", modelName: "sonic-2" } });
    session.emit("metrics_collected", { metrics: { type: "stt_metrics", label: "deepgram.STT", timestamp: T0, audioDurationMs: 1000, metadata: { modelProvider: "Deepgram", modelName: "nova-3" } } });
    session.emit("error", { error: { type: "tts_error", label: "cartesia.TTS", error: new Error("x") }, source: component });
    session.emit("metrics_collected", { metrics: { type: "llm_metrics", label: "openai.LLM", timestamp: T0, promptTokens: 3, completionTokens: 1, metadata: { modelProvider: "api.openai.com", modelName: "gpt-4.1-mini" } } });
    await handle.detach();
    const got = await sessionRows("att-call-2");
    expect(got.requests.map((r) => [r.model_id, r.input_tokens, r.output_tokens])).toEqual([["openai/gpt-4.1-mini", 3, 1]]);
    expect(handle.stats().skippedGateway).toBe(3);
  });

  it("heartbeats the worker from the first attached session: busy while a session is open, idle after", async () => {
    await closeAttachClients();
    const session = newSession();
    const opts = { collectorUrl: app.base, apiKey: OPERATOR_KEY, agentId: "lk-worker-1", agentName: "support-bot", version: "9.9.9", heartbeatIntervalMs: 50 };
    const handle = attach(session, { ...opts, sessionId: "att-call-3" });
    const roster = async () => {
      const res = await fetch(`${app.base}/v1/agents`, { headers: { authorization: `Bearer ${OPERATOR_KEY}` } });
      const body = (await res.json()) as { agents: Record<string, unknown>[] };
      return body.agents.find((a) => a.agent_id === "lk-worker-1");
    };
    const until = async (pred: (e: Record<string, unknown> | undefined) => boolean) => {
      for (;;) {
        const e = await roster();
        if (pred(e)) return e;
        await new Promise((r) => setTimeout(r, 20));
      }
    };
    // The first heartbeat went out as the session attached, already busy.
    expect(await until((e) => e !== undefined)).toMatchObject({ status: "busy", version: "9.9.9" });
    const second = attach(newSession(), { ...opts, sessionId: "att-call-4" }); // same worker client, one heartbeat
    session.emit("close", { type: "close", error: null, reason: "user_initiated", createdAt: Date.now() });
    expect(handle.stats().client.sent.heartbeats).toBe(second.stats().client.sent.heartbeats);
    await second.detach();
    expect(await until((e) => e?.status === "idle")).toMatchObject({ status: "idle" });
    await closeAttachClients();
  });
});

describe("attach() edge cases of turns and dead air", () => {
  it("a short pause continues the turn, a long one leaves it unanswered; a caller left waiting at close is dead air", async () => {
    const session = newSession();
    const handle = attach(session, { collectorUrl: app.base, apiKey: OPERATOR_KEY, sessionId: "att-edge", deadAirThresholdMs: 2000, heartbeatIntervalMs: 0 });
    const user = (newState: string, at: number) => session.emit("user_state_changed", { type: "user_state_changed", newState, createdAt: T0 + at });
    const agent = (newState: string, at: number) => session.emit("agent_state_changed", { type: "agent_state_changed", newState, createdAt: T0 + at });
    agent("speaking", 0); // a greeting: no turn (the caller has not spoken)
    agent("listening", 1000);
    user("speaking", 1500);
    user("listening", 2000);
    user("speaking", 2500); // 0.5 s pause: the same turn
    user("listening", 3000);
    user("speaking", 6000); // 3 s without an answer: turn 0 unanswered, dead air 3000-6000
    user("listening", 6500);
    agent("speaking", 7000); // turn 1 answered after 0.5 s
    user("speaking", 7200); // barge-in: turn 2 opens while the agent still speaks
    agent("listening", 7400); // turn 1 ends
    user("listening", 8000);
    session.emit("close", { type: "close", createdAt: T0 + 11_000 }); // turn 2 unanswered; 3 s waiting = dead air
    await handle.flush();
    const got = await sessionRows("att-edge");
    expect(got.turns.map((t) => [t.turn_index, t.caller_speak_start_ms, t.caller_speak_end_ms, t.agent_speak_start_ms, t.agent_speak_end_ms, t.response_speed_ms])).toEqual([
      [0, 1500, 3000, null, null, null],
      [1, 6000, 6500, 7000, 7400, 500],
      [2, 7200, 8000, null, null, null],
    ]);
    expect(got.deadAir.map((d) => [d.started_at_ms, d.duration_ms])).toEqual([
      [3000, 3000],
      [8000, 3000],
    ]);
  });
});

describe("attach() with the collector down", () => {
  it("never throws into the session, holds at most maxBuffer rows per kind and counts the drops", async () => {
    const dead = createServer();
    await new Promise<void>((r) => dead.listen(0, "127.0.0.1", r));
    const address = dead.address();
    const port = typeof address === "object" && address ? address.port : 0;
    await new Promise<void>((r) => dead.close(() => r())); // nothing listens there now
    const errors: Error[] = [];
    const session = newSession();
    const handle = attach(session, {
      collectorUrl: `http://127.0.0.1:${port}`,
      apiKey: OPERATOR_KEY,
      sessionId: "att-down",
      maxBuffer: 5,
      heartbeatIntervalMs: 0,
      flushIntervalMs: 3_600_000, // only the test's flush() drains, so no batch is in flight when counted
      onError: (e) => {
        errors.push(e);
        throw new Error("a throwing onError must not reach the session either");
      },
    });
    const events = threeTurnCall(host()).filter(([name]) => name !== "close");
    expect(() => {
      for (let i = 0; i < 20; i++) play(session, events, T0 + i * 100_000);
      // Events attach cannot read: nothing thrown either.
      session.emit("metrics_collected", null);
      session.emit("user_state_changed", undefined);
      session.emit("error", { error: null });
      session.emit("metrics_collected", { metrics: { type: "stt_metrics", get metadata(): never { throw new Error("hostile getter"); } } });
    }).not.toThrow();
    await handle.flush();
    const stats = handle.stats();
    expect(stats.internalErrors).toBe(1); // the hostile getter, reported through onError
    expect(stats.client.queued.records).toBeLessThanOrEqual(5);
    expect(stats.client.queued.turns).toBeLessThanOrEqual(5);
    expect(stats.client.dropped).toBeGreaterThan(0);
    expect(stats.client.dropped + stats.client.queued.records + stats.client.queued.turns + stats.client.queued.dead_air).toBe(stats.records + stats.turns + stats.deadAir);
    expect(errors.length).toBeGreaterThan(0);
    expect(() => session.emit("close", { type: "close", createdAt: T0 + 3_000_000 })).not.toThrow();
    await closeAttachClients();
  });
});
