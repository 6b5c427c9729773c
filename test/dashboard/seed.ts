import { randomUUID } from "node:crypto";
import { summarizeSamples } from "../../src/stats/summary.js";

export const OPS_KEY = "ops-browser-key-0123456789";
export const READ_KEY = "read-browser-key-0123456789";

/** A collector with auth on: the operator's key and a read-only key. */
export const BROWSER_YAML = `
providers:
  openai: { api_key: sk-test-openai-00000000000000001234 }
  deepgram: { api_key: dg-test-5678 }
  elevenlabs: { api_key: el-test-9012 }
models:
  stt:
    deepgram/nova-3: { provider: deepgram, model: nova-3 }
  llm:
    openai/gpt-4.1-mini: { provider: openai, model: gpt-4.1-mini }
  tts:
    elevenlabs/eleven_flash_v2_5: { provider: elevenlabs, model: eleven_flash_v2_5 }
projects:
  support: { name: Support line, daily_budget: 25, budget_action: block, tags: [prod] }
rate_card:
  default_markup: 1.25
  rules:
    - { modality: stt, markup: 1.5 }
auth:
  api_keys:
    - { key: ${OPS_KEY}, name: ops }
    - { key: ${READ_KEY}, name: finance-read, scopes: [read] }
`;

const HOUR = 3_600_000;
export const LLM = "openai/gpt-4.1-mini";
export const STT = "deepgram/nova-3";
export const TTS = "elevenlabs/eleven_flash_v2_5";
export const SESSION = "sess-demo-1";
export const ROOM = "room-demo-1";
export const AGENT = "agent-eu-1";
/** A load-test call of the agent (origin loadgen: probe traffic, what the fleet index counts apart). */
export const PROBE_ROOM = "room-loadgen-1";

/** TTFBs of the llm requests of the last 24 h (what the latency page's p95 must show). */
export const LLM_TTFBS = [180, 220, 240, 260, 300, 320, 380, 420, 520, 650];

/**
 * What the seed adds up to (the pages must show exactly these): 20 requests in the last 24 h, one of
 * them an error, and 5 more 30 hours ago.
 */
export const EXPECTED = {
  costToday: 10 * 0.0125 + 6 * 0.0043 + 4 * 0.03, // 0.2708
  costAll: 10 * 0.0125 + 6 * 0.0043 + 4 * 0.03 + 5 * 0.1, // 0.7708
  requestsToday: 20,
  errorRatePct: 5,
  llmCostToday: 0.125,
  llmP95Ttfb: summarizeSamples(LLM_TTFBS)?.p95 ?? 0,
  sessionCost: 3 * 0.0125 + 2 * 0.0043 + 2 * 0.03, // 0.1061
  turnResponseMs: [640, 910, 1270],
};

function records(now: number) {
  const out: Record<string, unknown>[] = [];
  const base = (agoMs: number) => ({ id: randomUUID(), timestamp: new Date(now - agoMs).toISOString(), project: "support", agent_id: AGENT });
  LLM_TTFBS.forEach((ttfb, i) => {
    const inSession = i < 3;
    out.push({
      ...base((i + 1) * HOUR + 5 * 60_000),
      modality: "llm",
      model_id: LLM,
      cost_usd: 0.0125,
      ttfb_ms: ttfb,
      total_latency_ms: ttfb * 4,
      input_tokens: 1200,
      output_tokens: 300,
      status: i === 4 ? "error" : "success",
      ...(i === 4 ? { error_message: "upstream 503 from provider" } : {}),
      ...(inSession ? { session_id: SESSION, room_name: ROOM, timestamp: new Date(now - 30 * 60_000 + i * 10_000).toISOString() } : {}),
      metadata: { seed: "browser", n: i },
    });
  });
  for (let i = 0; i < 6; i++) {
    out.push({
      ...base((i + 1) * 2 * HOUR),
      modality: "stt",
      model_id: STT,
      cost_usd: 0.0043,
      ttfb_ms: 90 + i * 10,
      total_latency_ms: 400,
      audio_seconds: 60,
      ...(i < 2 ? { session_id: SESSION, room_name: ROOM, timestamp: new Date(now - 30 * 60_000 + 40_000 + i * 10_000).toISOString() } : {}),
    });
  }
  for (let i = 0; i < 4; i++) {
    out.push({
      ...base((i + 1) * 3 * HOUR),
      modality: "tts",
      model_id: TTS,
      cost_usd: 0.03,
      ttfb_ms: 150 + i * 20,
      total_latency_ms: 900,
      characters: 1000,
      status: i === 0 ? "fallback" : "success",
      ...(i === 0 ? { fallback_from: "cartesia/sonic-2" } : {}),
      ...(i < 2 ? { session_id: SESSION, room_name: ROOM, timestamp: new Date(now - 30 * 60_000 + 70_000 + i * 10_000).toISOString() } : {}),
    });
  }
  for (let i = 0; i < 5; i++) out.push({ ...base(30 * HOUR + i * 60_000), modality: "llm", model_id: LLM, cost_usd: 0.1, ttfb_ms: 300, total_latency_ms: 1200 });
  return out;
}

async function post(baseUrl: string, path: string, body: unknown, expected: number[] = [200, 201, 202]): Promise<unknown> {
  const res = await fetch(`${baseUrl}${path}`, {
    method: "POST",
    headers: { authorization: `Bearer ${OPS_KEY}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  if (!expected.includes(res.status)) throw new Error(`seed ${path}: ${res.status} ${text}`);
  return text ? JSON.parse(text) : null;
}

/** The agent's heartbeat (presence ages out after 45 s: tests that read the roster send a fresh one). */
export async function heartbeat(baseUrl: string): Promise<void> {
  await post(baseUrl, "/v1/agents/heartbeat", {
    agent_id: AGENT,
    agent_name: "support-agent",
    status: "busy",
    active_sessions: 2,
    version: "1.4.2",
    project: "support",
    region: "eu-west",
    host: "agent-host-7",
    memory_rss_bytes: 412 * 1024 * 1024,
    memory_total_bytes: 4 * 1024 * 1024 * 1024,
    cpu_pct: 37.5,
  });
}

/** Seeds a running Voxgate through its production write path (ingest, turns, dead air, heartbeat, observations). */
export async function seedThroughApi(baseUrl: string, now = Date.now()): Promise<void> {
  await post(baseUrl, "/v1/ingest", records(now));
  const start = now - 30 * 60_000;
  const turns = EXPECTED.turnResponseMs.map((speed, i) => {
    const callerEnd = start + 5_000 + i * 20_000;
    return {
      session_id: SESSION,
      room_name: ROOM,
      turn_index: i,
      caller_speak_start_ms: callerEnd - 3_000,
      caller_speak_end_ms: callerEnd,
      agent_speak_start_ms: callerEnd + speed,
      agent_speak_end_ms: callerEnd + speed + 4_000,
      response_speed_ms: speed,
    };
  });
  await post(baseUrl, "/v1/ingest/turns", turns);
  await post(baseUrl, "/v1/ingest/dead-air", [{ session_id: SESSION, room_name: ROOM, started_at_ms: start + 46_000, duration_ms: 2_400, threshold_used_ms: 1_500 }]);
  await heartbeat(baseUrl);
  await post(baseUrl, "/v1/calls/observations", {
    origin: "agent",
    room_sid: "RM_demo_1",
    room_name: ROOM,
    project: "support",
    agent_id: AGENT,
    started_at_ms: start,
    ended_at_ms: start + 95_000,
    legs: [
      { participant_sid: "PA_sip_1", identity: "sip_+15550100", kind: "SIP", joined_at_ms: start, left_at_ms: start + 95_000, disconnect_reason: "CLIENT_INITIATED", first_audio_track_at_ms: start + 350, audio_codec: "opus" },
      { participant_sid: "PA_agent_1", identity: AGENT, kind: "AGENT", joined_at_ms: start + 200, left_at_ms: start + 95_000, first_audio_track_at_ms: start + 600, audio_codec: "opus" },
    ],
  });
  await post(baseUrl, "/v1/calls/observations", {
    origin: "loadgen",
    room_sid: "RM_loadgen_1",
    room_name: PROBE_ROOM,
    project: "support",
    agent_id: AGENT,
    started_at_ms: start + 120_000,
    ended_at_ms: start + 180_000,
  });
  // Observations are queued (202) and written by a background flusher: wait until both calls are readable.
  for (let i = 0; i < 100; i++) {
    const res = await fetch(`${baseUrl}/api/calls`, { headers: { authorization: `Bearer ${OPS_KEY}` } });
    if (res.ok && ((await res.json()) as unknown[]).length >= 2) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error("the seeded call observations were never written");
}
