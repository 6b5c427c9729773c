import { randomUUID } from "node:crypto";
import type { voice } from "@livekit/agents";
import { type ClientStats, type NewRequestRecord, type Turn, VoxgateClient } from "../client/index.js";
import { VERSION } from "../version.js";
import type { Modality, VoxgateGateway } from "./gateway.js";
import { isGatewayHost, isGatewayInstance, isGatewayMetrics, trackHost } from "./plugins.js";

/** What attach() needs of an AgentSession: its event emitter (any EventEmitter with LiveKit's events). */
export interface AgentSessionLike {
  on(event: string, listener: (ev: unknown) => void): unknown;
  off(event: string, listener: (ev: unknown) => void): unknown;
}

/** LiveKit's own AgentSession (its typed emitter), or anything shaped like it. */
export type AttachableSession = AgentSessionLike | voice.AgentSession;

export interface AttachOptions {
  /** Collector base URL; default env VOXGATE_COLLECTOR_URL, else VOXGATE_URL, else the gateway's URL. */
  collectorUrl?: string;
  /** Key with the ingest (or `*`) scope; default env VOXGATE_API_KEY, else the gateway's key. */
  apiKey?: string;
  /** Default: the gateway's project, else `default`. */
  project?: string;
  /** Default: the gateway's session id; one of the two is required. */
  sessionId?: string;
  /** The LiveKit room; turns and dead air then show in `GET /v1/rooms/{room}/latency`. */
  roomName?: string;
  /** Silence (neither side speaking) at least this long is a dead-air row. Default 2000 ms. */
  deadAirThresholdMs?: number;
  /** The gateway the session's plugins were pointed at: its defaults, and its calls never recorded twice. */
  gateway?: VoxgateGateway;
  /** Modalities whose components all go through the gateway (plugins built by hand from the fragments). */
  viaGateway?: readonly Modality[];
  /** Rows buffered per kind while the collector is unreachable; beyond it the oldest drop (counted). Default 10000. */
  maxBuffer?: number;
  /** Worker identity on the roster. */
  agentId?: string;
  agentName?: string;
  /** Reported in heartbeats; default Voxgate's version. */
  version?: string;
  /** Heartbeat cadence (default 15 s; 0 turns them off). */
  heartbeatIntervalMs?: number;
  flushIntervalMs?: number;
  env?: NodeJS.ProcessEnv;
  /** Called (never throwing into the voice loop) on a send failure or an event attach could not read. */
  onError?: (err: Error) => void;
}

export interface AttachStats {
  /** Events seen, by name. */
  events: number;
  turns: number;
  deadAir: number;
  records: number;
  /** Metrics/errors left to the gateway's own rows. */
  skippedGateway: number;
  /** Events attach could not read (never thrown into the session). */
  internalErrors: number;
  client: ClientStats;
}

export interface Attachment {
  readonly sessionId: string;
  stats(): AttachStats;
  /** Sends what is buffered now. */
  flush(): Promise<void>;
  /** Stops listening (as `close` does), records the open turn and silence, and flushes. */
  detach(): Promise<void>;
}

interface Shared {
  client: VoxgateClient;
  /** Sessions attached and not yet closed: the heartbeat's busy/idle and active_sessions. */
  state: { active: number };
}

/** One client (and so one heartbeat) per collector and key for the whole worker; counts the session in. */
const clients = new Map<string, Shared>();

function sharedClient(collectorUrl: string, apiKey: string | undefined, opts: AttachOptions, project: string): Shared {
  const key = `${collectorUrl}\u0000${apiKey ?? ""}`;
  const found = clients.get(key);
  if (found) {
    found.state.active++;
    return found;
  }
  // Counted before the client exists: its first heartbeat (sent as it starts) already says busy.
  const state = { active: 1 };
  const version = opts.version ?? VERSION;
  const client = new VoxgateClient({
    collectorUrl,
    apiKey,
    env: opts.env,
    maxBuffer: opts.maxBuffer,
    agentId: opts.agentId,
    flushIntervalMs: opts.flushIntervalMs,
    heartbeatIntervalMs: opts.heartbeatIntervalMs,
    onError: opts.onError,
    heartbeat: () => ({
      status: state.active > 0 ? "busy" : "idle",
      active_sessions: state.active,
      version,
      project,
      ...(opts.agentName ? { agent_name: opts.agentName } : {}),
    }),
  });
  const shared: Shared = { client, state };
  clients.set(key, shared);
  return shared;
}

/** Flushes and closes every worker client attach() opened (graceful shutdown; tests). */
export async function closeAttachClients(): Promise<void> {
  const all = [...clients.values()];
  clients.clear();
  await Promise.all(all.map((s) => s.client.close().catch(() => {})));
}

interface TurnDraft {
  index: number;
  start: number;
  end: number | null;
  agentStart: number | null;
}

const METRIC_MODALITY: Record<string, Modality> = { stt_metrics: "stt", llm_metrics: "llm", tts_metrics: "tts", realtime_model_metrics: "llm" };
const ERROR_MODALITY: Record<string, Modality> = { stt_error: "stt", llm_error: "llm", tts_error: "tts", realtime_model_error: "llm" };

/** LiveKit's provider names (and the OpenAI plugins' hosts) → Voxgate provider ids. */
export function providerId(provider: string | undefined, label: string | undefined): string {
  const p = (provider ?? "").toLowerCase();
  if (p === "api.openai.com" || p === "openai") return "openai";
  if (p.endsWith(".groq.com") || p === "groq") return "groq";
  if (p && !p.includes(".") && !p.includes(":")) return p.replace(/\s+/g, "");
  const fromLabel = (label ?? "").split(".")[0]?.toLowerCase();
  return fromLabel || p || "unknown";
}

const hostOf = (url: string): string => {
  try {
    return new URL(url).host;
  } catch {
    return url;
  }
};

/** `provider/model`, unless the model name already carries that provider prefix. */
const modelIdOf = (provider: string, model: string) => (model.startsWith(`${provider}/`) ? model : `${provider}/${model}`);

const num = (v: unknown): number | undefined => (typeof v === "number" && Number.isFinite(v) ? v : undefined);
const str = (v: unknown): string | undefined => (typeof v === "string" && v.length > 0 ? v : undefined);
const obj = (v: unknown): Record<string, unknown> => (v && typeof v === "object" ? (v as Record<string, unknown>) : {});

/**
 * Meters one LiveKit AgentSession into Voxgate: turns (caller speak end → agent speak start),
 * dead-air spans, and request records for components that did not go through the gateway. Every
 * listener is O(1) work plus a push into the client's bounded buffers; nothing is awaited or thrown
 * into the voice loop.
 */
export function attach(agentSession: AttachableSession, options: AttachOptions = {}): Attachment {
  const session = agentSession as unknown as AgentSessionLike;
  const env = options.env ?? process.env;
  const gw = options.gateway;
  const sessionId = options.sessionId ?? gw?.sessionId ?? null;
  if (!sessionId) throw new TypeError("attach() needs a sessionId (or a gateway made with one)");
  const project = options.project ?? gw?.project ?? "default";
  const roomName = options.roomName;
  const threshold = options.deadAirThresholdMs ?? 2000;
  const viaGateway = new Set(options.viaGateway ?? []);
  const collectorUrl = options.collectorUrl ?? (env.VOXGATE_COLLECTOR_URL || env.VOXGATE_URL || gw?.url);
  const apiKey = options.apiKey ?? (env.VOXGATE_API_KEY || undefined);

  const shared = collectorUrl ? sharedClient(collectorUrl, apiKey, options, project) : null;
  // The collector is a Voxgate: a plugin reporting its host as provider went through its gateway.
  if (collectorUrl) trackHost(hostOf(collectorUrl));
  const client = shared?.client ?? null;
  const room = roomName ? { room_name: roomName } : {};

  const counts = { events: 0, turns: 0, deadAir: 0, records: 0, skippedGateway: 0, internalErrors: 0 };
  let turnIndex = 0;
  let userSpeaking = false;
  let agentSpeaking = false;
  let open: TurnDraft | null = null; // the caller's turn not yet answered
  let answering: TurnDraft | null = null; // answered; ends when the agent stops speaking
  let silenceSince: number | null = null; // neither side speaking since (after the first speech)
  let closed = false;

  const emitTurn = (t: TurnDraft, agentEnd: number | null) => {
    if (t.end === null) return;
    const turn: Turn = {
      session_id: sessionId,
      turn_index: t.index,
      caller_speak_start_ms: t.start,
      caller_speak_end_ms: t.end,
      agent_speak_start_ms: t.agentStart,
      agent_speak_end_ms: agentEnd,
      response_speed_ms: t.agentStart === null ? null : Math.max(0, t.agentStart - t.end),
      ...room,
    };
    counts.turns++;
    client?.turn(turn);
  };

  const endSilence = (at: number, always = true) => {
    if (silenceSince === null) return;
    const duration = at - silenceSince;
    if (always && duration >= threshold) {
      counts.deadAir++;
      client?.deadAir({ session_id: sessionId, started_at_ms: silenceSince, duration_ms: duration, threshold_used_ms: threshold, ...room });
    }
    silenceSince = null;
  };

  const onUserState = (ev: { oldState?: string; newState?: string; createdAt?: number }) => {
    const at = num(ev.createdAt) ?? Date.now();
    const speaking = ev.newState === "speaking";
    if (speaking === userSpeaking) return;
    userSpeaking = speaking;
    if (speaking) {
      endSilence(at);
      if (open && open.end !== null && open.agentStart === null) {
        // The caller spoke again before any answer: the same turn after a short pause, a new one after a silence.
        if (at - open.end >= threshold) {
          emitTurn(open, null);
          open = { index: turnIndex++, start: at, end: null, agentStart: null };
        } else open.end = null;
      } else if (!open) open = { index: turnIndex++, start: at, end: null, agentStart: null };
    } else {
      if (open) open.end = at;
      if (!agentSpeaking) silenceSince = at;
    }
  };

  const onAgentState = (ev: { oldState?: string; newState?: string; createdAt?: number }) => {
    const at = num(ev.createdAt) ?? Date.now();
    const speaking = ev.newState === "speaking";
    if (speaking === agentSpeaking) return;
    agentSpeaking = speaking;
    if (speaking) {
      endSilence(at);
      if (open && open.end !== null && !answering) {
        open.agentStart = at;
        answering = open;
        open = null;
      }
    } else {
      if (answering) {
        emitTurn(answering, at);
        answering = null;
      }
      if (!userSpeaking) silenceSince = at;
    }
  };

  const isGatewayComponent = (modality: Modality, provider: string | undefined, source?: unknown) =>
    viaGateway.has(modality) || isGatewayHost(provider) || (source !== undefined && isGatewayInstance(source));

  const baseRecord = (modality: Modality, modelId: string, provider: string) => ({
    modality,
    model_id: modelId,
    provider,
    project,
    session_id: sessionId,
    ...room,
    ...(client?.agentId ? { agent_id: client.agentId } : {}),
  });

  const onMetrics = (ev: { metrics?: unknown }) => {
    const m = obj(ev.metrics);
    const type = str(m.type);
    const modality = type ? METRIC_MODALITY[type] : undefined;
    if (!modality) return; // vad, eou, interruption…: no request of their own
    const meta = obj(m.metadata);
    const providerName = str(meta.modelProvider);
    if (isGatewayMetrics(ev.metrics) || isGatewayComponent(modality, providerName)) {
      counts.skippedGateway++;
      return;
    }
    const provider = providerId(providerName, str(m.label));
    const model = str(meta.modelName) ?? "unknown";
    const rec: NewRequestRecord = {
      ...baseRecord(modality, modelIdOf(provider, model), provider),
      id: randomUUID(),
      timestamp: num(m.timestamp) ?? Date.now(),
      turn_index: (modality === "tts" ? (answering?.index ?? open?.index) : (open?.index ?? answering?.index)) ?? Math.max(0, turnIndex - 1),
      metadata: { source: "livekit", label: str(m.label), request_id: str(m.requestId), ...(m.cancelled === true ? { cancelled: true } : {}) },
    };
    if (type === "stt_metrics") {
      rec.audio_seconds = (num(m.audioDurationMs) ?? 0) / 1000;
      const d = num(m.durationMs);
      if (d) rec.total_latency_ms = d;
    } else if (type === "tts_metrics") {
      rec.characters = num(m.charactersCount) ?? 0;
      rec.ttfb_ms = num(m.ttfbMs);
      rec.total_latency_ms = num(m.durationMs);
    } else {
      rec.input_tokens = num(m.promptTokens) ?? num(m.inputTokens) ?? 0;
      rec.output_tokens = num(m.completionTokens) ?? num(m.outputTokens) ?? 0;
      const cached = num(m.promptCachedTokens) ?? num(obj(m.inputTokenDetails).cachedTokens);
      if (cached !== undefined) rec.cached_input_tokens = cached;
      const ttft = num(m.ttftMs);
      if (ttft !== undefined && ttft >= 0) rec.ttfb_ms = ttft;
      rec.total_latency_ms = num(m.durationMs);
    }
    counts.records++;
    client?.record(rec);
  };

  const onError = (ev: { error?: unknown; source?: unknown; createdAt?: number }) => {
    const e = obj(ev.error);
    const type = str(e.type);
    const modality = type ? ERROR_MODALITY[type] : undefined;
    if (!modality) return;
    const src = obj(ev.source);
    const providerName = str(src.provider);
    if (isGatewayComponent(modality, providerName, ev.source)) {
      counts.skippedGateway++;
      return;
    }
    const provider = providerId(providerName, str(e.label));
    const inner = e.error;
    const message = inner instanceof Error ? inner.message : (str(obj(inner).message) ?? str(e.message) ?? "error");
    counts.records++;
    client?.record({
      ...baseRecord(modality, modelIdOf(provider, str(src.model) ?? "unknown"), provider),
      timestamp: num(e.timestamp) ?? num(ev.createdAt) ?? Date.now(),
      status: "error",
      error_message: message.slice(0, 1000),
      metadata: { source: "livekit", label: str(e.label), recoverable: e.recoverable === true },
    });
  };

  const finish = (at: number) => {
    if (closed) return;
    closed = true;
    for (const [name, fn] of listeners) session.off(name, fn);
    if (answering) emitTurn(answering, agentSpeaking ? at : null);
    // A caller left waiting for an answer: the silence up to the close is dead air, the turn unanswered.
    const waiting = open !== null && open.end !== null;
    if (open) emitTurn(open, null);
    endSilence(at, waiting);
    answering = null;
    open = null;
    if (shared) shared.state.active = Math.max(0, shared.state.active - 1);
    void client?.flush();
  };

  const guard =
    <E>(fn: (ev: E) => void) =>
    (ev: unknown) => {
      counts.events++;
      try {
        fn((ev ?? {}) as E);
      } catch (err) {
        counts.internalErrors++;
        try {
          options.onError?.(err instanceof Error ? err : new Error(String(err)));
        } catch {
          // the caller's callback must not reach the voice loop either
        }
      }
    };

  const listeners: [string, (ev: unknown) => void][] = [
    ["user_state_changed", guard(onUserState)],
    ["agent_state_changed", guard(onAgentState)],
    ["metrics_collected", guard(onMetrics)],
    ["error", guard(onError)],
    ["close", guard((ev: { createdAt?: number }) => finish(num(ev.createdAt) ?? Date.now()))],
  ];
  for (const [name, fn] of listeners) session.on(name, fn);

  return {
    sessionId,
    stats: () => ({
      ...counts,
      client: client?.stats() ?? {
        queued: { records: 0, turns: 0, dead_air: 0 },
        sent: { records: 0, turns: 0, dead_air: 0, heartbeats: 0 },
        dropped: 0,
        rejected: 0,
        failedAttempts: 0,
      },
    }),
    flush: async () => {
      await client?.flush();
    },
    detach: async () => {
      finish(Date.now());
      await client?.flush();
    },
  };
}
