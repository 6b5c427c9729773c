import { gzipSync } from "node:zlib";
import { sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { ACME, AUTH_YAML, countOf, rows } from "../ingest/helpers.js";
import { useTestApp } from "../support/app.js";
import { otlpState, skipsByExport } from "../../src/otlp/receive.js";
import { jsonBody, protobufBody, SpanScript } from "./support.js";

/**
 * Exports written concurrently: several exports of the same sessions (and re-sends of them) posted
 * at once, round after round, each round's halves in any order. Every answer is a clean 200 and the
 * sessions, turns, records and rollups are exactly those of one export at a time.
 */
describe("POST /v1/otlp/v1/traces: overlapping exports at once", () => {
  const t = useTestApp({ yaml: AUTH_YAML });
  const db = () => t.services.database.db;
  const SESSIONS = 6;
  const TURNS = 3;

  it("stores overlapping concurrent exports of the same sessions exactly once, without errors", async () => {
    const script = new SpanScript({ "service.name": "concurrent-agent", "telemetry.sdk.language": "nodejs" });
    const t0 = Date.now() - 300_000;
    const sessions = Array.from({ length: SESSIONS }, (_, i) => {
      const conv = `RM_conc_${i}`;
      return { conv, span: script.start("agent_session", t0, { "gen_ai.conversation.id": conv }) };
    });
    script.take();
    const post = async (spans: ReturnType<SpanScript["take"]>) => {
      const res = await t.call("POST", "/v1/otlp/v1/traces", { key: ACME, raw: jsonBody(spans), headers: { "content-type": "application/json" } });
      return { status: res.status, body: await res.json() };
    };
    for (let k = 0; k < TURNS; k++) {
      const at = t0 + 10_000 * (k + 1);
      const userHalf = sessions.map(({ span }) => {
        const user = script.start("user_turn", at, { "gen_ai.request.model": "nova-3", "gen_ai.provider.name": "deepgram", "lk.transcription_delay": 150 }, span);
        script.start("user_speaking", at, {}, user).end(at + 1500);
        user.end(at + 1600);
        return script.take();
      });
      const agentHalf = sessions.map(({ conv, span }) => {
        const agent = script.start("agent_turn", at + 1600, { "gen_ai.conversation.id": conv, "gen_ai.agent.name": "front-desk" }, span);
        const req = script.start(
          "llm_request",
          at + 1610,
          { "gen_ai.provider.name": "openai", "gen_ai.request.model": "gpt-4o-mini", "gen_ai.usage.input_tokens": 100, "gen_ai.usage.output_tokens": 10 },
          agent,
        );
        req.end(at + 2000);
        const tts = script.start("tts_request", at + 1700, { "lk.tts.label": "elevenlabs.TTS", "gen_ai.request.model": "eleven_flash_v2_5" }, agent);
        tts.end(at + 2500);
        script.start("agent_speaking", at + 2100, {}, agent).end(at + 5000);
        agent.end(at + 5000);
        return script.take();
      });
      // Each session's halves in two or three exports at once, each export carrying several
      // sessions, and two of them sent twice (an exporter's retry racing its first attempt).
      const users1 = userHalf.slice(0, 3).flat();
      const users2 = userHalf.slice(3).flat();
      const agentsEven = agentHalf.filter((_, i) => i % 2 === 0).flat();
      const agentsOdd = agentHalf.filter((_, i) => i % 2 === 1).flat();
      const answers = await Promise.all([users1, agentsEven, users2, agentsOdd, users1, agentsOdd].map(post));
      expect(answers).toEqual(answers.map(() => ({ status: 200, body: {} })));
    }
    for (const { span } of sessions) span.end(t0 + 60_000);
    const closing = script.take();
    const answers = await Promise.all([closing.slice(0, 3), closing.slice(3), closing].map(post));
    expect(answers).toEqual(answers.map(() => ({ status: 200, body: {} })));

    // Exactly one STT, LLM and TTS record per turn, one turn per user turn, in order.
    expect(await countOf(db(), "requests")).toBe(SESSIONS * TURNS * 3);
    const perSession = await rows<{ id: string; request_count: number; agent_id: string }>(
      db(),
      sql`SELECT id, request_count::int, agent_id FROM sessions ORDER BY id`,
    );
    expect(perSession).toEqual(sessions.map(({ conv }) => ({ id: conv, request_count: TURNS * 3, agent_id: "front-desk" })));
    const turns = await rows<{ session_id: string; turn_index: number; caller_speak_start_ms: string; response_speed_ms: number }>(
      db(),
      sql`SELECT session_id, turn_index, caller_speak_start_ms, response_speed_ms FROM turns ORDER BY session_id, turn_index`,
    );
    expect(turns).toEqual(
      sessions.flatMap(({ conv }) =>
        Array.from({ length: TURNS }, (_, k) => ({ session_id: conv, turn_index: k, caller_speak_start_ms: String(t0 + 10_000 * (k + 1)), response_speed_ms: 600 })),
      ),
    );
    // The rollups folded every record once, and the agent's rollups every turn once (folded by
    // ingest's fold statement with the records), at each grain.
    const [rollup] = await rows<{ n: number }>(db(), sql`SELECT sum(requests)::int AS n FROM request_rollups`);
    expect(rollup?.n).toBe(SESSIONS * TURNS * 3);
    for (const table of ["fleet_index_agent_rollups", "fleet_index_agent_rollups_daily", "fleet_index_agent_rollups_monthly"]) {
      const agent = await rows<{ agent_id: string; requests: number; turns: number }>(
        db(),
        sql`SELECT agent_id, sum(requests)::int AS requests, sum(turns)::int AS turns FROM ${sql.raw(table)} GROUP BY agent_id`,
      );
      expect(agent).toEqual([{ agent_id: "front-desk", requests: SESSIONS * TURNS * 3, turns: SESSIONS * TURNS }]);
    }
    expect(await rows(db(), sql`SELECT 1 FROM turns WHERE agent_id IS DISTINCT FROM 'front-desk'`)).toEqual([]);
    // Every kept span is marked mapped (all sessions are named).
    expect(await rows(db(), sql`SELECT 1 FROM otlp_spans WHERE NOT mapped`)).toEqual([]);
  });

  it("exports written together as one batch are each answered for their own spans", async () => {
    const script = new SpanScript({ "service.name": "grouped-agent", "telemetry.sdk.language": "nodejs" });
    const t0 = Date.now() - 200_000;
    // Five closed one-turn sessions, one export each, posted at once (writers take the exports waiting
    // together as one batch); the third's LLM request reports a fractional token count (its record is
    // refused by ingest's rules).
    const exports = Array.from({ length: 5 }, (_, i) => {
      const conv = `RM_group_${i}`;
      const session = script.start("agent_session", t0, { "gen_ai.conversation.id": conv });
      const user = script.start("user_turn", t0 + 100, { "gen_ai.request.model": "nova-3", "gen_ai.provider.name": "deepgram" }, session);
      script.start("user_speaking", t0 + 100, {}, user).end(t0 + 1500);
      user.end(t0 + 1600);
      const agent = script.start("agent_turn", t0 + 1600, { "gen_ai.conversation.id": conv, "gen_ai.agent.name": "front-desk" }, session);
      const tokens = i === 2 ? 1.5 : 100;
      const req = script.start("llm_request", t0 + 1610, { "gen_ai.provider.name": "openai", "gen_ai.request.model": "gpt-4o-mini", "gen_ai.usage.input_tokens": tokens }, agent);
      req.end(t0 + 2000);
      script.start("agent_speaking", t0 + 2100, {}, agent).end(t0 + 5000);
      agent.end(t0 + 5000);
      session.end(t0 + 6000);
      return script.take();
    });
    const batchesBefore = otlpState(t.services).batches;
    const answers = await Promise.all(
      exports.map(async (spans) => {
        const res = await t.call("POST", "/v1/otlp/v1/traces", { key: ACME, raw: jsonBody(spans), headers: { "content-type": "application/json" } });
        return { status: res.status, body: (await res.json()) as { partialSuccess?: { rejectedSpans: string; errorMessage: string } } };
      }),
    );
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200, 200]);
    // Both writers took one export each as the five arrived; the three that waited went as one batch.
    expect(otlpState(t.services).batches - batchesBefore).toBeLessThan(5);
    expect(answers.map((a) => a.body.partialSuccess?.rejectedSpans ?? "0")).toEqual(["0", "0", "1", "0", "0"]);
    expect(answers[2]?.body.partialSuccess?.errorMessage).toContain("input_tokens");
    const stored = await rows<{ session_id: string; n: number }>(
      db(),
      sql`SELECT session_id, count(*)::int AS n FROM requests WHERE session_id LIKE 'RM_group_%' GROUP BY session_id ORDER BY session_id`,
    );
    expect(stored.map((r) => r.n)).toEqual([2, 2, 1, 2, 2]);
    expect(await rows(db(), sql`SELECT session_id FROM turns WHERE session_id LIKE 'RM_group_%' ORDER BY session_id`)).toHaveLength(5);
  });
});

/**
 * A fleet: one export in flight per agent process, more processes than the receiver once admitted
 * (8). Over HTTP, as an exporter with OTEL_EXPORTER_OTLP_COMPRESSION=gzip (or an OpenTelemetry
 * Collector relaying) sends them: gzip, chunked, no Content-Length.
 */
describe("POST /v1/otlp/v1/traces: a fleet exporting at once", () => {
  const t = useTestApp({ yaml: AUTH_YAML });
  const EXPORTERS = 24;

  it("admits 24 gzip exports in flight at once, each answered 200 the first time, and stores each", async () => {
    const base = await t.listen();
    const t0 = Date.now() - 60_000;
    const bodies = Array.from({ length: EXPORTERS }, (_, i) => {
      const script = new SpanScript({ "service.name": `fleet-agent-${i}`, "telemetry.sdk.language": "nodejs" });
      const session = script.start("agent_session", t0, { "gen_ai.conversation.id": `RM_fleet_${i}` });
      const user = script.start("user_turn", t0 + 10, { "gen_ai.request.model": "nova-3", "gen_ai.provider.name": "deepgram" }, session);
      script.start("user_speaking", t0 + 10, {}, user).end(t0 + 1010);
      user.end(t0 + 1100);
      session.end(t0 + 2000);
      return gzipSync(protobufBody(script.take()));
    });
    const send = (gz: Buffer) =>
      fetch(`${base}/v1/otlp/v1/traces`, {
        method: "POST",
        headers: { authorization: `Bearer ${ACME}`, "content-type": "application/x-protobuf", "content-encoding": "gzip" },
        body: new ReadableStream({
          start(c) {
            c.enqueue(new Uint8Array(gz));
            c.close();
          },
        }),
        duplex: "half",
      } as RequestInit);
    const answers = await Promise.all(bodies.map(send));
    expect(answers.map((r) => r.status)).toEqual(Array(EXPORTERS).fill(200));
    const state = otlpState(t.services);
    expect([state.inFlight, state.inFlightBytes]).toEqual([0, 0]);
    expect(await rows(db(), sql`SELECT id FROM sessions WHERE id LIKE 'RM_fleet_%'`)).toHaveLength(EXPORTERS);
  });

  const db = () => t.services.database.db;
});

describe("skipsByExport", () => {
  it("counts each skipped row against the export it came from", () => {
    // Three exports of rows [0,3), [3,5), [5,9).
    const starts = [0, 3, 5];
    expect(skipsByExport(starts, 9, [{ index: 4, reason: "b" }, { index: 6, reason: "c" }])).toEqual({ counts: [0, 1, 1], reasons: [undefined, "b", "c"] });
    expect(skipsByExport(starts, 9, [])).toEqual({ counts: [0, 0, 0], reasons: [undefined, undefined, undefined] });
    // Rows of one export and the next, each counted where it stands.
    const four = [3, 4, 5, 8].map((index) => ({ index, reason: `r${index}` }));
    expect(skipsByExport(starts, 9, four)).toEqual({ counts: [0, 2, 2], reasons: [undefined, "r3", "r5"] });
  });
});
