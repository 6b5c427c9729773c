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

type Handler = "user" | "agent" | "metrics" | "error" | "close";
const LISTENED: readonly [string, Handler][] = [
  ["user_state_changed", "user"],
  ["agent_state_changed", "agent"],
  ["metrics_collected", "metrics"],
  ["error", "error"],
  ["close", "close"],
];

interface StateEvent {
  newState?: string;
  createdAt?: number;
}

/**
 * One attached session's state. A class, not closures made per session: its methods are shared by
 * every session of the worker, so V8 optimizes them once instead of running each new session's
 * handlers cold (bench:attach).
 */
class SessionMeter {
  readonly counts = { events: 0, turns: 0, deadAir: 0, records: 0, skippedGateway: 0, internalErrors: 0 };
  private turnIndex = 0;
  private userSpeaking = false;
  private agentSpeaking = false;
  /** The caller's turn not yet answered. */
  private open: TurnDraft | null = null;
  /** Answered; ends when the agent stops speaking. */
  private answering: TurnDraft | null = null;
  /** Neither side speaking since (after the first speech). */
  private silenceSince: number | null = null;
  private closed = false;
  private readonly listeners: [string, (ev: unknown) => void][];
  // Fixed-shape rows (undefined fields are left out of the JSON): no object spreads per event.
  private readonly roomName: string | undefined;
  private readonly agentId: string | undefined;

  constructor(
    private readonly session: AgentSessionLike,
    readonly sessionId: string,
    private readonly project: string,
    roomName: string | undefined,
    private readonly threshold: number,
    private readonly viaGateway: ReadonlySet<Modality>,
    private readonly shared: Shared | null,
    private readonly onError: ((err: Error) => void) | undefined,
  ) {
    this.roomName = roomName;
    this.agentId = shared?.client.agentId ?? undefined;
    this.listeners = LISTENED.map(([name, handler]) => [name, (ev: unknown) => this.dispatch(handler, ev)]);
    for (const [name, fn] of this.listeners) session.on(name, fn);
  }

  private get client(): VoxgateClient | null {
    return this.shared?.client ?? null;
  }

  /** Every listener goes through here: counted, and nothing thrown back into the session. */
  dispatch(handler: Handler, raw: unknown): void {
    this.counts.events++;
    const ev = (raw ?? {}) as Record<string, unknown>;
    try {
      if (handler === "user") this.onUserState(ev as StateEvent);
      else if (handler === "agent") this.onAgentState(ev as StateEvent);
      else if (handler === "metrics") this.onMetrics(ev);
      else if (handler === "error") this.onErrorEvent(ev);
      else this.finish(num(ev.createdAt) ?? Date.now());
    } catch (err) {
      this.counts.internalErrors++;
      try {
        this.onError?.(err instanceof Error ? err : new Error(String(err)));
      } catch {
        // the caller's callback must not reach the voice loop either
      }
    }
  }

  private emitTurn(t: TurnDraft, agentEnd: number | null): void {
    if (t.end === null) return;
    const turn: Turn = {
      session_id: this.sessionId,
      turn_index: t.index,
      caller_speak_start_ms: t.start,
      caller_speak_end_ms: t.end,
      agent_speak_start_ms: t.agentStart,
      agent_speak_end_ms: agentEnd,
      response_speed_ms: t.agentStart === null ? null : Math.max(0, t.agentStart - t.end),
      room_name: this.roomName,
    };
    this.counts.turns++;
    this.client?.turn(turn);
  }

  private endSilence(at: number, record = true): void {
    const since = this.silenceSince;
    if (since === null) return;
    const duration = at - since;
    if (record && duration >= this.threshold) {
      this.counts.deadAir++;
      this.client?.deadAir({ session_id: this.sessionId, started_at_ms: since, duration_ms: duration, threshold_used_ms: this.threshold, room_name: this.roomName });
    }
    this.silenceSince = null;
  }

  private onUserState(ev: StateEvent): void {
    const at = num(ev.createdAt) ?? Date.now();
    const speaking = ev.newState === "speaking";
    if (speaking === this.userSpeaking) return;
    this.userSpeaking = speaking;
    const open = this.open;
    if (speaking) {
      this.endSilence(at);
      if (open && open.end !== null && open.agentStart === null) {
        // The caller spoke again before any answer: the same turn after a short pause, a new one after a silence.
        if (at - open.end >= this.threshold) {
          this.emitTurn(open, null);
          this.open = { index: this.turnIndex++, start: at, end: null, agentStart: null };
        } else open.end = null;
      } else if (!open) this.open = { index: this.turnIndex++, start: at, end: null, agentStart: null };
    } else {
      if (open) open.end = at;
      if (!this.agentSpeaking) this.silenceSince = at;
    }
  }

  private onAgentState(ev: StateEvent): void {
    const at = num(ev.createdAt) ?? Date.now();
    const speaking = ev.newState === "speaking";
    if (speaking === this.agentSpeaking) return;
    this.agentSpeaking = speaking;
    if (speaking) {
      this.endSilence(at);
      const open = this.open;
      if (open && open.end !== null && !this.answering) {
        open.agentStart = at;
        this.answering = open;
        this.open = null;
      }
    } else {
      if (this.answering) {
        this.emitTurn(this.answering, at);
        this.answering = null;
      }
      if (!this.userSpeaking) this.silenceSince = at;
    }
  }

  private isGatewayComponent(modality: Modality, provider: string | undefined, source?: unknown): boolean {
    return this.viaGateway.has(modality) || isGatewayHost(provider) || (source !== undefined && isGatewayInstance(source));
  }

  private turnIndexFor(modality: Modality): number {
    const a = this.answering?.index;
    const o = this.open?.index;
    return (modality === "tts" ? (a ?? o) : (o ?? a)) ?? Math.max(0, this.turnIndex - 1);
  }

  private onMetrics(ev: Record<string, unknown>): void {
    const m = obj(ev.metrics);
    const type = str(m.type);
    const modality = type ? METRIC_MODALITY[type] : undefined;
    if (!modality) return; // vad, eou, interruption…: no request of their own
    const meta = obj(m.metadata);
    const providerName = str(meta.modelProvider);
    if (isGatewayMetrics(ev.metrics) || this.isGatewayComponent(modality, providerName)) {
      this.counts.skippedGateway++;
      return;
    }
    const label = str(m.label);
    const provider = providerId(providerName, label);
    const isStt = type === "stt_metrics";
    const isTts = type === "tts_metrics";
    const isLlm = !isStt && !isTts;
    const duration = num(m.durationMs);
    const ttft = isLlm ? num(m.ttftMs) : undefined;
    const rec: NewRequestRecord = {
      id: randomUUID(),
      timestamp: num(m.timestamp) ?? Date.now(),
      modality,
      model_id: modelIdOf(provider, str(meta.modelName) ?? "unknown"),
      provider,
      project: this.project,
      session_id: this.sessionId,
      room_name: this.roomName,
      agent_id: this.agentId,
      turn_index: this.turnIndexFor(modality),
      // A streaming STT reports 0 ms: no latency of its own.
      total_latency_ms: isStt && !duration ? undefined : duration,
      ttfb_ms: isTts ? num(m.ttfbMs) : ttft !== undefined && ttft >= 0 ? ttft : undefined,
      audio_seconds: isStt ? (num(m.audioDurationMs) ?? 0) / 1000 : undefined,
      characters: isTts ? (num(m.charactersCount) ?? 0) : undefined,
      input_tokens: isLlm ? (num(m.promptTokens) ?? num(m.inputTokens) ?? 0) : undefined,
      output_tokens: isLlm ? (num(m.completionTokens) ?? num(m.outputTokens) ?? 0) : undefined,
      cached_input_tokens: isLlm ? (num(m.promptCachedTokens) ?? num(obj(m.inputTokenDetails).cachedTokens)) : undefined,
      metadata: { source: "livekit", label, request_id: str(m.requestId), cancelled: m.cancelled === true ? true : undefined },
    };
    this.counts.records++;
    this.client?.record(rec);
  }

  private onErrorEvent(ev: Record<string, unknown>): void {
    const e = obj(ev.error);
    const type = str(e.type);
    const modality = type ? ERROR_MODALITY[type] : undefined;
    if (!modality) return;
    const src = obj(ev.source);
    const providerName = str(src.provider);
    if (this.isGatewayComponent(modality, providerName, ev.source)) {
      this.counts.skippedGateway++;
      return;
    }
    const label = str(e.label);
    const provider = providerId(providerName, label);
    const inner = e.error;
    const message = inner instanceof Error ? inner.message : (str(obj(inner).message) ?? str(e.message) ?? "error");
    this.counts.records++;
    this.client?.record({
      timestamp: num(e.timestamp) ?? num(ev.createdAt) ?? Date.now(),
      modality,
      model_id: modelIdOf(provider, str(src.model) ?? "unknown"),
      provider,
      project: this.project,
      session_id: this.sessionId,
      room_name: this.roomName,
      agent_id: this.agentId,
      status: "error",
      error_message: message.slice(0, 1000),
      metadata: { source: "livekit", label, recoverable: e.recoverable === true },
    });
  }

  finish(at: number): void {
    if (this.closed) return;
    this.closed = true;
    for (const [name, fn] of this.listeners) this.session.off(name, fn);
    if (this.answering) this.emitTurn(this.answering, this.agentSpeaking ? at : null);
    // A caller left waiting for an answer: the silence up to the close is dead air, the turn unanswered.
    const waiting = this.open !== null && this.open.end !== null;
    if (this.open) this.emitTurn(this.open, null);
    this.endSilence(at, waiting);
    this.answering = null;
    this.open = null;
    if (this.shared) this.shared.state.active = Math.max(0, this.shared.state.active - 1);
    // No flush here: the worker's client sends every flushIntervalMs in batches shared by all its
    // sessions (a POST per closing call would cost more than all its events; bench:attach).
  }
}

const emptyClientStats = (): ClientStats => ({
  queued: { records: 0, turns: 0, dead_air: 0 },
  sent: { records: 0, turns: 0, dead_air: 0, heartbeats: 0 },
  dropped: 0,
  rejected: 0,
  failedAttempts: 0,
});

/**
 * Meters one LiveKit AgentSession into Voxgate: turns (caller speak end → agent speak start),
 * dead-air spans, and request records for components that did not go through the gateway. Every
 * listener is O(1) work plus a push into the client's bounded buffers; nothing is awaited or thrown
 * into the voice loop.
 */
export function attach(agentSession: AttachableSession, options: AttachOptions = {}): Attachment {
  const env = options.env ?? process.env;
  const gw = options.gateway;
  const sessionId = options.sessionId ?? gw?.sessionId ?? null;
  if (!sessionId) throw new TypeError("attach() needs a sessionId (or a gateway made with one)");
  const project = options.project ?? gw?.project ?? "default";
  const collectorUrl = options.collectorUrl ?? (env.VOXGATE_COLLECTOR_URL || env.VOXGATE_URL || gw?.url);
  const apiKey = options.apiKey ?? (env.VOXGATE_API_KEY || undefined);
  const shared = collectorUrl ? sharedClient(collectorUrl, apiKey, options, project) : null;
  // The collector is a Voxgate: a plugin reporting its host as provider went through its gateway.
  if (collectorUrl) trackHost(hostOf(collectorUrl));
  const meter = new SessionMeter(
    agentSession as unknown as AgentSessionLike,
    sessionId,
    project,
    options.roomName,
    options.deadAirThresholdMs ?? 2000,
    new Set(options.viaGateway ?? []),
    shared,
    options.onError,
  );
  const client = shared?.client ?? null;
  return {
    sessionId,
    stats: () => ({ ...meter.counts, client: client?.stats() ?? emptyClientStats() }),
    flush: async () => {
      await client?.flush();
    },
    detach: async () => {
      meter.finish(Date.now());
      await client?.flush();
    },
  };
}
