import { sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { ACME, AUTH_YAML, countOf, record, rows } from "../ingest/helpers.js";
import { useTestApp } from "../support/app.js";
import { exportSpans, jsonBody, llmMetricsNode, SpanScript, ttsMetricsNode } from "./support.js";

/**
 * LiveKit Agents' span shapes (Node 1.9 and Python 1.x attribute names and units) built with the
 * real OpenTelemetry SDK and sent by the real OTLP/HTTP exporter: sessions, turns and records.
 */
describe("POST /v1/otlp/v1/traces: LiveKit spans to sessions, turns and records", () => {
  const t = useTestApp({ yaml: AUTH_YAML, listen: true });
  const db = () => t.services.database.db;
  const url = () => `${t.base}/v1/otlp/v1/traces`;

  /** One Node-shaped voice turn inside a job (conversation id = room SID), ended span by span. */
  function nodeSession(script: SpanScript, conv: string, t0: number) {
    const session = script.start("agent_session", t0, { "gen_ai.operation.name": "invoke_workflow", "gen_ai.workflow.name": "AgentSession", "gen_ai.conversation.id": conv });
    const userTurn = script.start(
      "user_turn",
      t0 + 100,
      {
        "gen_ai.request.model": "nova-3",
        "gen_ai.provider.name": "deepgram",
        "lk.pii.user_transcript": "what are your opening hours",
        "lk.transcript_confidence": 0.93,
        "lk.transcription_delay": 180,
        "lk.end_of_turn_delay": 420,
      },
      session,
    );
    const speaking = script.start("user_speaking", t0 + 100, {}, userTurn);
    speaking.end(t0 + 1600);
    const eou = script.start("eou_detection", t0 + 1600, { "lk.eou.probability": 0.9 }, userTurn);
    eou.end(t0 + 1650);
    userTurn.end(t0 + 1700);
    return {
      session,
      agentHalf(opts: { tts?: boolean } = {}) {
        const agentTurn = script.start(
          "agent_turn",
          t0 + 1700,
          { "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "front-desk", "gen_ai.conversation.id": conv, "lk.speech_id": "speech_1" },
          session,
        );
        const llmNode = script.start("llm_node", t0 + 1710, { "gen_ai.request.model": "gpt-4o-mini", "gen_ai.provider.name": "openai" }, agentTurn);
        // The fallback adapter's wrapper around the real request: only the innermost one counts.
        const outer = script.start("llm_request", t0 + 1710, { "gen_ai.request.model": "FallbackAdapter", "gen_ai.provider.name": "livekit" }, llmNode);
        const run = script.start("llm_request_run", t0 + 1711, {}, outer);
        const inner = script.start(
          "llm_request",
          t0 + 1712,
          {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": "openai",
            "gen_ai.request.model": "gpt-4o-mini",
            "gen_ai.conversation.id": conv,
            "gen_ai.usage.input_tokens": 1200,
            "gen_ai.usage.output_tokens": 80,
            "gen_ai.usage.cache_read.input_tokens": 1024,
            "gen_ai.response.time_to_first_chunk": 0.35,
            "gen_ai.input.messages": '[{"role":"user","parts":[{"type":"text","content":"what are your opening hours"}]}]',
            "lk.llm_metrics": llmMetricsNode({ promptTokens: 1200, completionTokens: 80, ttftMs: 350, durationMs: 900, model: "gpt-4o-mini", provider: "openai" }),
          },
          run,
        );
        inner.end(t0 + 2612);
        run.end(t0 + 2613);
        outer.end(t0 + 2614);
        llmNode.end(t0 + 2620);
        if (opts.tts !== false) {
          const ttsNode = script.start("tts_node", t0 + 1800, { "gen_ai.request.model": "eleven_flash_v2_5", "gen_ai.provider.name": "ElevenLabs" }, agentTurn);
          const ttsRequest = script.start(
            "tts_request",
            t0 + 1800,
            {
              "lk.tts.streaming": true,
              "lk.tts.label": "elevenlabs.TTS",
              "lk.tts_metrics": ttsMetricsNode({ characters: 64, ttfbMs: 210, durationMs: 1500, audioDurationMs: 3900, model: "eleven_flash_v2_5", provider: "elevenlabs" }),
            },
            ttsNode,
          );
          ttsRequest.end(t0 + 3300);
          ttsNode.end(t0 + 3310);
        }
        const tool = script.start("function_tool", t0 + 2000, { "lk.function_tool.name": "lookup_hours" }, agentTurn);
        tool.end(t0 + 2050);
        const agentSpeaking = script.start("agent_speaking", t0 + 2100, {}, agentTurn);
        agentSpeaking.end(t0 + 6000);
        agentTurn.end(t0 + 6000);
      },
      close() {
        // Closing the session emits an empty user turn (no user_speaking) and ends the session span.
        const empty = script.start(
          "user_turn",
          t0 + 7000,
          { "gen_ai.request.model": "nova-3", "gen_ai.provider.name": "deepgram", "lk.pii.user_transcript": "", "lk.transcription_delay": 0, "lk.end_of_turn_delay": 0 },
          session,
        );
        empty.end(t0 + 7000);
        session.end(t0 + 7100);
      },
    };
  }

  it("maps a Node session sent in two batches: the STT, innermost LLM and TTS records, and the turn", async () => {
    const script = new SpanScript({ "service.name": "front-desk-worker", "telemetry.sdk.language": "nodejs", "voxgate.project": "support" });
    const t0 = Date.now() - 60_000;
    const s = nodeSession(script, "RM_node_1", t0);
    // First batch: the caller's turn only, which names no session (Node puts the conversation id on the
    // LLM request and the agent turn): nothing is written until a span of the trace names it.
    const first = script.take();
    await exportSpans(url(), ACME, first);
    expect(await countOf(db(), "requests")).toBe(0);
    const waiting = await rows<{ name: string }>(db(), sql`SELECT name FROM otlp_spans WHERE NOT mapped ORDER BY name`);
    expect(waiting.map((r) => r.name)).toEqual(["user_speaking", "user_turn"]);
    s.agentHalf();
    s.close();
    const second = script.take();
    await exportSpans(url(), ACME, second);
    // The spans that waited are mapped now, and marked so.
    expect(await rows(db(), sql`SELECT name FROM otlp_spans WHERE NOT mapped`)).toEqual([]);

    const records = await rows<Record<string, unknown>>(
      db(),
      sql`SELECT modality, model_id, provider, session_id, project, agent_id, tenant_id, input_tokens::int, output_tokens::int, cached_input_tokens::int,
            characters::int, audio_seconds, ttfb_ms, total_latency_ms, status, rated_price_usd, metadata
          FROM requests WHERE session_id = 'RM_node_1' ORDER BY modality`,
    );
    expect(records.map((r) => r.modality)).toEqual(["llm", "stt", "tts"]);
    const [llm, stt, tts] = records as [Record<string, unknown>, Record<string, unknown>, Record<string, unknown>];
    expect(llm).toMatchObject({
      model_id: "openai/gpt-4o-mini",
      provider: "openai",
      project: "support",
      agent_id: "front-desk",
      tenant_id: "acme",
      input_tokens: 1200,
      output_tokens: 80,
      cached_input_tokens: 1024,
      ttfb_ms: 350,
      total_latency_ms: 900,
      status: "success",
    });
    expect(Number(llm.rated_price_usd)).toBeGreaterThan(0);
    expect(stt).toMatchObject({ model_id: "deepgram/nova-3", provider: "deepgram", audio_seconds: 1.5, ttfb_ms: 180 });
    expect(stt.metadata).toMatchObject({ audio_seconds_estimated: true, end_of_turn_delay_ms: 420, source: "otlp" });
    expect(Number(stt.rated_price_usd)).toBeGreaterThan(0);
    expect(tts).toMatchObject({ model_id: "elevenlabs/eleven_flash_v2_5", characters: 64, ttfb_ms: 210, total_latency_ms: 1500 });
    expect(tts.metadata).toMatchObject({ audio_duration_ms: 3900 });
    expect(Number(tts.rated_price_usd)).toBeGreaterThan(0);
    // No message content reaches a record.
    expect(JSON.stringify(records)).not.toContain("opening hours");

    const turns = await rows(db(), sql`SELECT turn_index, caller_speak_start_ms, caller_speak_end_ms, agent_speak_start_ms, response_speed_ms FROM turns WHERE session_id = 'RM_node_1'`);
    expect(turns).toEqual([
      { turn_index: 0, caller_speak_start_ms: String(t0 + 100), caller_speak_end_ms: String(t0 + 1600), agent_speak_start_ms: String(t0 + 2100), response_speed_ms: 500 },
    ]);
    const [session] = await rows(db(), sql`SELECT id, agent_id, tenant_id FROM sessions WHERE id = 'RM_node_1'`);
    expect(session).toMatchObject({ id: "RM_node_1", tenant_id: "acme" });

    // Exporters retry: both batches again, nothing stored twice.
    const before = { requests: await countOf(db(), "requests"), turns: await countOf(db(), "turns") };
    await exportSpans(url(), ACME, first);
    await exportSpans(url(), ACME, second);
    expect({ requests: await countOf(db(), "requests"), turns: await countOf(db(), "turns") }).toEqual(before);
  });

  it("completes a turn whose agent half arrives in a later batch", async () => {
    const script = new SpanScript();
    const t0 = Date.now() - 50_000;
    const s = nodeSession(script, "RM_node_2", t0);
    // The LLM request names the session, so the caller's half is mapped at once (its STT record),
    // while the turn waits for the agent's speech.
    const earlyRequest = script.start("llm_request", t0 + 1712, { "gen_ai.conversation.id": "RM_node_2", "gen_ai.request.model": "gpt-4o-mini", "gen_ai.provider.name": "openai", "gen_ai.usage.input_tokens": 10, "gen_ai.usage.output_tokens": 2 }, s.session);
    earlyRequest.end(t0 + 1800);
    await exportSpans(url(), ACME, script.take());
    expect(await rows(db(), sql`SELECT modality FROM requests WHERE session_id = 'RM_node_2' ORDER BY modality`)).toEqual([{ modality: "llm" }, { modality: "stt" }]);
    expect(await rows(db(), sql`SELECT 1 FROM turns WHERE session_id = 'RM_node_2'`)).toEqual([]);

    s.agentHalf({ tts: false });
    await exportSpans(url(), ACME, script.take());
    expect(await rows(db(), sql`SELECT turn_index, response_speed_ms FROM turns WHERE session_id = 'RM_node_2'`)).toEqual([{ turn_index: 0, response_speed_ms: 500 }]);
  });

  it("attributes the turns its session already had, stored before any record named the agent, once an export names it", async () => {
    // A turn of the session arrives through /v1/ingest/turns first: no session row, no agent yet.
    const t0 = Date.now() - 45_000;
    const early = await t.call("POST", "/v1/ingest/turns", {
      key: ACME,
      body: [{ session_id: "RM_attach", turn_index: 7, caller_speak_start_ms: t0 - 9000, caller_speak_end_ms: t0 - 8000, agent_speak_start_ms: t0 - 7700, response_speed_ms: 300 }],
    });
    expect(early.status).toBe(200);
    expect(await rows(db(), sql`SELECT agent_id FROM turns WHERE session_id = 'RM_attach'`)).toEqual([{ agent_id: null }]);

    // An agent of its own (the file's other sessions count toward front-desk).
    const script = new SpanScript({ "service.name": "voice-agent", "telemetry.sdk.language": "nodejs", "voxgate.agent_id": "attach-desk" });
    const s = nodeSession(script, "RM_attach", t0);
    s.agentHalf({ tts: false });
    await exportSpans(url(), ACME, script.take());
    expect(await rows(db(), sql`SELECT turn_index, agent_id FROM turns WHERE session_id = 'RM_attach' ORDER BY turn_index`)).toEqual([
      { turn_index: 0, agent_id: "attach-desk" },
      { turn_index: 7, agent_id: "attach-desk" },
    ]);
    // Both count toward the agent once, with their response speeds, at every grain.
    for (const table of ["fleet_index_agent_rollups", "fleet_index_agent_rollups_daily", "fleet_index_agent_rollups_monthly"]) {
      const [sums] = await rows(db(), sql`SELECT sum(turns)::int AS turns FROM ${sql.raw(table)} WHERE agent_id = 'attach-desk' AND tenant_id = 'acme'`);
      expect(sums).toEqual({ turns: 2 });
    }
    const [hour] = await rows<{ n: number }>(
      db(),
      sql`SELECT sum((response_hist->>'count')::int)::int AS n FROM fleet_index_agent_rollups WHERE agent_id = 'attach-desk' AND tenant_id = 'acme'`,
    );
    expect(hour?.n).toBe(2);
  });

  it("numbers turns in the room their session already has, seq after seq across exports, each stamped with the session's agent", async () => {
    // The session is known from /v1/ingest with its room and agent; the agent's spans name neither room.
    const res = await fetch(`${t.base}/v1/ingest`, {
      method: "POST",
      headers: { authorization: `Bearer ${ACME}`, "content-type": "application/json" },
      body: JSON.stringify([record({ session_id: "RM_room_known", room_name: "room-known", agent_id: "front-desk" })]),
    });
    expect(res.status).toBe(200);
    const t0 = Date.now() - 40_000;
    for (const start of [t0, t0 + 10_000]) {
      // Two traces of the one conversation, one export each (the first names the session on sight).
      const script = new SpanScript();
      const s = nodeSession(script, "RM_room_known", start);
      s.agentHalf({ tts: false });
      await exportSpans(url(), ACME, script.take());
    }
    expect(
      await rows(db(), sql`SELECT room_name, seq::int, agent_id, response_speed_ms FROM turns WHERE session_id = 'RM_room_known' ORDER BY caller_speak_start_ms`),
    ).toEqual([
      { room_name: "room-known", seq: 1, agent_id: "front-desk", response_speed_ms: 500 },
      { room_name: "room-known", seq: 2, agent_id: "front-desk", response_speed_ms: 500 },
    ]);
  });

  it("keeps only the spans later batches read: a wrapper ending a batch after its inner request is still skipped", async () => {
    const script = new SpanScript();
    const t0 = Date.now() - 45_000;
    const conv = "RM_node_kept";
    const s = nodeSession(script, conv, t0);
    const agentTurn = script.start("agent_turn", t0 + 1700, { "gen_ai.agent.name": "front-desk", "gen_ai.conversation.id": conv }, s.session);
    const llmNode = script.start("llm_node", t0 + 1710, {}, agentTurn);
    const outer = script.start("llm_request", t0 + 1710, { "gen_ai.request.model": "FallbackAdapter", "gen_ai.provider.name": "livekit" }, llmNode);
    const run = script.start("llm_request_run", t0 + 1711, {}, outer);
    const inner = script.start(
      "llm_request",
      t0 + 1712,
      { "gen_ai.provider.name": "openai", "gen_ai.request.model": "gpt-4o-mini", "gen_ai.conversation.id": conv, "gen_ai.usage.input_tokens": 10, "gen_ai.usage.output_tokens": 2 },
      run,
    );
    inner.end(t0 + 2000);
    run.end(t0 + 2001);
    // First batch: the caller's turn, the inner request and its run; the wrapper is still open.
    await exportSpans(url(), ACME, script.take());
    const kept = () => rows<{ name: string }>(db(), sql`SELECT name FROM otlp_spans WHERE trace_id = ${s.session.spanContext().traceId} ORDER BY name`);
    // The turn's halves pair later; the run's parent (the wrapper) has not come: both request spans stay.
    expect((await kept()).map((r) => r.name)).toEqual(["llm_request", "llm_request_run", "user_speaking", "user_turn"]);

    outer.end(t0 + 2002);
    llmNode.end(t0 + 2003);
    script.start("agent_speaking", t0 + 2100, {}, agentTurn).end(t0 + 4000);
    agentTurn.end(t0 + 4000);
    await exportSpans(url(), ACME, script.take());
    // The wrapper found its inner request among the kept spans: one LLM record, the inner one's.
    expect(await rows(db(), sql`SELECT model_id FROM requests WHERE session_id = ${conv} AND modality = 'llm'`)).toEqual([{ model_id: "openai/gpt-4o-mini" }]);
    expect(await rows(db(), sql`SELECT turn_index, response_speed_ms FROM turns WHERE session_id = ${conv}`)).toEqual([{ turn_index: 0, response_speed_ms: 500 }]);
    // The wrapper (under its llm_node) and the node are not kept; the agent turn and its speech are.
    expect((await kept()).map((r) => r.name)).toEqual(["agent_speaking", "agent_turn", "llm_request", "llm_request_run", "user_speaking", "user_turn"]);

    // The session span closes the trace: of the last batch only it is kept.
    s.close();
    await exportSpans(url(), ACME, script.take());
    expect((await kept()).map((r) => r.name)).toEqual(["agent_session", "agent_speaking", "agent_turn", "llm_request", "llm_request_run", "user_speaking", "user_turn"]);
    expect(await rows(db(), sql`SELECT turn_index FROM turns WHERE session_id = ${conv}`)).toEqual([{ turn_index: 0 }]);
  });

  it("maps Python's shape: snake_case metrics in seconds, delays in seconds, the job id as the session (OTLP/JSON)", async () => {
    const script = new SpanScript({ "service.name": "py-agent", "telemetry.sdk.language": "python" });
    const t0 = Date.now() - 40_000;
    const job = script.start("job_entrypoint", t0, { "lk.job_id": "AJ_py_1", "lk.agent_name": "py-receptionist", "lk.pii.room_name": "room-py-1" });
    const session = script.start("agent_session", t0 + 1, {}, job);
    const userTurn = script.start(
      "user_turn",
      t0 + 100,
      { "gen_ai.request.model": "nova-3", "gen_ai.provider.name": "deepgram", "lk.transcription_delay": 0.25, "lk.end_of_turn_delay": 0.5 },
      session,
    );
    script.start("user_speaking", t0 + 100, {}, userTurn).end(t0 + 2100);
    userTurn.end(t0 + 2200);
    const agentTurn = script.start("agent_turn", t0 + 2200, { "lk.generation_id": "gen_1" }, session);
    const llm = script.start(
      "llm_request",
      t0 + 2210,
      {
        "lk.llm_metrics": JSON.stringify({
          type: "llm_metrics",
          label: "livekit.plugins.openai.llm.LLM",
          request_id: "r1",
          timestamp: (t0 + 3000) / 1000,
          duration: 1.25,
          ttft: 0.4,
          cancelled: false,
          completion_tokens: 30,
          prompt_tokens: 500,
          prompt_cached_tokens: 0,
          total_tokens: 530,
          tokens_per_second: 24,
          metadata: { model_name: "gpt-4o-mini", model_provider: "openai" },
        }),
      },
      agentTurn,
    );
    llm.end(t0 + 3460);
    const tts = script.start(
      "tts_request",
      t0 + 2300,
      {
        "lk.tts_metrics": JSON.stringify({
          type: "tts_metrics",
          label: "livekit.plugins.elevenlabs.tts.TTS",
          request_id: "t1",
          timestamp: (t0 + 4000) / 1000,
          ttfb: 0.3,
          duration: 1.1,
          audio_duration: 2.5,
          cancelled: false,
          characters_count: 40,
          streamed: true,
          metadata: { model_name: "eleven_flash_v2_5", model_provider: "elevenlabs" },
        }),
      },
      agentTurn,
    );
    tts.end(t0 + 3400);
    script.start("agent_speaking", t0 + 2900, {}, agentTurn).end(t0 + 5400);
    agentTurn.end(t0 + 5400);
    session.end(t0 + 6000);
    job.end(t0 + 6001);

    const res = await fetch(url(), { method: "POST", headers: { authorization: `Bearer ${ACME}`, "content-type": "application/json" }, body: jsonBody(script.take()) });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({});

    const records = await rows<Record<string, unknown>>(
      db(),
      sql`SELECT modality, model_id, room_name, agent_id, input_tokens::int, output_tokens::int, characters::int, ttfb_ms, total_latency_ms, audio_seconds, metadata
          FROM requests WHERE session_id = 'AJ_py_1' ORDER BY modality`,
    );
    expect(records).toMatchObject([
      { modality: "llm", model_id: "openai/gpt-4o-mini", room_name: "room-py-1", agent_id: "py-receptionist", input_tokens: 500, output_tokens: 30, ttfb_ms: 400, total_latency_ms: 1250 },
      { modality: "stt", audio_seconds: 2, ttfb_ms: 250, metadata: { end_of_turn_delay_ms: 500, audio_seconds_estimated: true } },
      { modality: "tts", model_id: "elevenlabs/eleven_flash_v2_5", characters: 40, ttfb_ms: 300, total_latency_ms: 1100, metadata: { audio_duration_ms: 2500 } },
    ]);
    expect(await rows(db(), sql`SELECT room_name, response_speed_ms FROM turns WHERE session_id = 'AJ_py_1'`)).toEqual([{ room_name: "room-py-1", response_speed_ms: 800 }]);
  });
});

describe("a Node agent's STT label as a catalog model", () => {
  const t = useTestApp({
    yaml: `${AUTH_YAML}providers:
  deepgram: {}
models:
  stt:
    deepgram/nova-2: { provider: deepgram }
    deepgram/nova-3: { provider: deepgram }
stacks:
  support: { stt: deepgram/nova-2 }
projects:
  support: { default_stack: support }
`,
    listen: true,
  });

  /** One committed caller turn as agents-js traces it: the STT plugin's label as the model. */
  async function nodeTurn(project: string, conv: string) {
    const script = new SpanScript({ "service.name": "worker", "telemetry.sdk.language": "nodejs", "voxgate.project": project });
    const t0 = Date.now() - 30_000;
    const session = script.start("agent_session", t0, { "gen_ai.conversation.id": conv });
    const turn = script.start("user_turn", t0 + 100, { "gen_ai.request.model": "deepgram.STT", "gen_ai.provider.name": "deepgram", "lk.transcription_delay": 120 }, session);
    script.start("user_speaking", t0 + 100, {}, turn).end(t0 + 2100);
    turn.end(t0 + 2200);
    session.end(t0 + 3000);
    await exportSpans(`${t.base}/v1/otlp/v1/traces`, ACME, script.take());
    const [r] = await rows<Record<string, unknown>>(t.services.database.db, sql`SELECT model_id, provider, rated_price_usd, metadata FROM requests WHERE session_id = ${conv}`);
    return r;
  }

  it("takes the project's stack model of the label's vendor, else marks the label unknown when the vendor has several models", async () => {
    const stacked = await nodeTurn("support", "RM_stt_stack");
    expect(stacked).toMatchObject({ model_id: "deepgram/nova-2", provider: "deepgram", metadata: { stt_label: "deepgram.STT", stt_model_source: "project_stack" } });
    expect(Number(stacked?.rated_price_usd)).toBeGreaterThan(0);
    const ambiguous = await nodeTurn("default", "RM_stt_two_models");
    expect(ambiguous).toMatchObject({ model_id: "deepgram/deepgram.STT", rated_price_usd: null, metadata: { stt_label: "deepgram.STT", stt_model_unknown: true } });
  });
});
