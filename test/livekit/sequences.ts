import { EventEmitter } from "node:events";

/**
 * Recorded AgentSession event sequences, in the shapes LiveKit Agents 1.9 emits them
 * (`voice/events.ts`: user_state_changed, agent_state_changed, metrics_collected, error, close),
 * times relative to the call's start. Used by the attach tests and bench:attach.
 */
export type RecordedEvent = [name: string, at: number, payload: Record<string, unknown>];

const user = (oldState: string, newState: string) => ({ type: "user_state_changed", oldState, newState });
const agent = (oldState: string, newState: string) => ({ type: "agent_state_changed", oldState, newState });

/** A Deepgram STT talking to Deepgram directly (not through the gateway). */
const directStt = (requestId: string, audioDurationMs: number) => ({
  type: "metrics_collected",
  metrics: { type: "stt_metrics", label: "deepgram.STT", requestId, durationMs: 0, audioDurationMs, streamed: true, metadata: { modelProvider: "Deepgram", modelName: "nova-3" } },
});
/** A Cartesia TTS talking to Cartesia directly. */
const directTts = (requestId: string, charactersCount: number) => ({
  type: "metrics_collected",
  metrics: {
    type: "tts_metrics",
    label: "cartesia.TTS",
    requestId,
    ttfbMs: 120,
    durationMs: 800,
    audioDurationMs: 2400,
    cancelled: false,
    charactersCount,
    streamed: true,
    metadata: { modelProvider: "Cartesia", modelName: "sonic-2" },
  },
});
/** An OpenAI LLM pointed at the gateway by hand (fragments): the plugin reports the gateway's host. */
const gatewayLlmByHost = (host: string) => ({
  type: "metrics_collected",
  metrics: {
    type: "llm_metrics",
    label: "openai.LLM",
    requestId: "chatcmpl-gw",
    durationMs: 400,
    ttftMs: 150,
    cancelled: false,
    completionTokens: 5,
    promptTokens: 12,
    promptCachedTokens: 4,
    totalTokens: 17,
    tokensPerSecond: 12.5,
    metadata: { modelProvider: host, modelName: "openai/gpt-4.1-mini" },
  },
});
const vad = { type: "metrics_collected", metrics: { type: "vad_metrics", label: "silero.VAD", idleTimeMs: 10, inferenceDurationTotalMs: 3, inferenceCount: 30 } };
const llmError = {
  type: "error",
  error: { type: "llm_error", timestamp: 0, label: "openai.LLM", error: new Error("connection reset by peer"), recoverable: true },
  source: { provider: "api.openai.com", model: "gpt-4.1-mini", label: "openai.LLM" },
};

/**
 * Three turns, one long silence (4 s after the first answer), one LLM error from a component
 * talking to its vendor directly, and a gateway component's metrics (by its host) that must not be
 * recorded again. Expected rows are in EXPECTED below.
 */
export function threeTurnCall(gatewayHost: string): RecordedEvent[] {
  return [
    ["agent_state_changed", 0, agent("initializing", "listening")],
    ["user_state_changed", 1000, user("listening", "speaking")],
    ["metrics_collected", 1500, vad],
    ["user_state_changed", 2500, user("speaking", "listening")],
    ["metrics_collected", 2550, directStt("dg-1", 1500)],
    ["agent_state_changed", 2600, agent("listening", "thinking")],
    ["metrics_collected", 2900, gatewayLlmByHost(gatewayHost)],
    ["agent_state_changed", 3100, agent("thinking", "speaking")],
    ["metrics_collected", 3150, directTts("ct-1", 40)],
    ["agent_state_changed", 5000, agent("speaking", "listening")],
    // 4 s of silence: dead air
    ["user_state_changed", 9000, user("listening", "speaking")],
    ["user_state_changed", 10000, user("speaking", "listening")],
    ["agent_state_changed", 10100, agent("listening", "thinking")],
    ["error", 10500, llmError],
    ["metrics_collected", 11000, gatewayLlmByHost(gatewayHost)],
    ["agent_state_changed", 11200, agent("thinking", "speaking")],
    ["agent_state_changed", 12000, agent("speaking", "listening")],
    ["user_state_changed", 12500, user("listening", "speaking")],
    ["user_state_changed", 13500, user("speaking", "listening")],
    ["agent_state_changed", 13600, agent("listening", "thinking")],
    ["agent_state_changed", 14300, agent("thinking", "speaking")],
    ["metrics_collected", 14350, directTts("ct-2", 25)],
    ["agent_state_changed", 15000, agent("speaking", "listening")],
    ["close", 15500, { type: "close", error: null, reason: "participant_disconnected" }],
  ];
}

/** What threeTurnCall must produce, times relative to the call's start. */
export const EXPECTED = {
  turns: [
    { turn_index: 0, caller_speak_start_ms: 1000, caller_speak_end_ms: 2500, agent_speak_start_ms: 3100, agent_speak_end_ms: 5000, response_speed_ms: 600 },
    { turn_index: 1, caller_speak_start_ms: 9000, caller_speak_end_ms: 10000, agent_speak_start_ms: 11200, agent_speak_end_ms: 12000, response_speed_ms: 1200 },
    { turn_index: 2, caller_speak_start_ms: 12500, caller_speak_end_ms: 13500, agent_speak_start_ms: 14300, agent_speak_end_ms: 15000, response_speed_ms: 800 },
  ],
  deadAir: [{ started_at_ms: 5000, duration_ms: 4000, threshold_used_ms: 2000 }],
};

/** Emits a recorded sequence on an AgentSession-shaped emitter, times shifted to `t0`; metrics timestamps too. */
export function play(session: EventEmitter, events: RecordedEvent[], t0: number): void {
  for (const [name, at, payload] of events) {
    const ev: Record<string, unknown> = { ...payload, createdAt: t0 + at };
    if (name === "metrics_collected") ev.metrics = { ...(payload.metrics as object), timestamp: t0 + at };
    if (name === "error") ev.error = { ...(payload.error as object), timestamp: t0 + at };
    session.emit(name, ev);
  }
}

export const newSession = (): EventEmitter => new EventEmitter();
