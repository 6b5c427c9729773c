import { hash } from "node:crypto";
import { readMetrics } from "./metrics-json.js";
import { type Attrs, num, type Span, str } from "./spans.js";

/**
 * LiveKit Agents spans to Voxgate request records and turns (the table is docs/api/otlp.md). Pure:
 * the same spans give the same records, with ids derived from the tenant, trace and span ids, so a
 * re-sent batch stores nothing twice.
 */

/** Span names the receiver maps or keeps for pairing; any other name is counted and dropped. */
export const MAPPED_SPANS = new Set([
  "agent_session",
  "job_entrypoint",
  "user_turn",
  "user_speaking",
  "agent_turn",
  "agent_speaking",
  "llm_node",
  "llm_request",
  "llm_request_run",
  "tts_node",
  "tts_request",
  "tts_request_run",
  "realtime_inference",
  "realtime_metrics",
]);

/** Attributes kept with a stored span: what mapping reads from it, never message contents. */
export const KEPT_ATTRIBUTES = new Set([
  "gen_ai.conversation.id",
  "lk.job_id",
  "lk.agent_name",
  "gen_ai.agent.name",
  "voxgate.agent_id",
  "lk.pii.room_name",
  "gen_ai.request.model",
  "gen_ai.provider.name",
  "gen_ai.response.time_to_first_chunk",
  "gen_ai.usage.input_tokens",
  "gen_ai.usage.output_tokens",
  "gen_ai.usage.cache_read.input_tokens",
  "gen_ai.usage.input_cached_tokens",
  "gen_ai.usage.audio.input_tokens",
  "gen_ai.usage.audio.output_tokens",
  "gen_ai.usage.text.input_tokens",
  "gen_ai.usage.text.output_tokens",
  "lk.llm_metrics",
  "lk.tts_metrics",
  "lk.realtime_model_metrics",
  "lk.tts.label",
  "lk.transcription_delay",
  "lk.end_of_turn_delay",
  "lk.transcript_confidence",
]);

/**
 * Every attribute the receiver reads, of a span or of its resource: the decoder keeps these and skips
 * the others unread (message contents among them).
 */
export const READ_ATTRIBUTES: ReadonlySet<string> = new Set([
  ...KEPT_ATTRIBUTES,
  "lk.pii.user_transcript",
  "service.name",
  "telemetry.sdk.language",
  "voxgate.project",
]);

/** Spans whose arrival means the session is over (both end when it closes). */
export const CLOSING_SPANS = new Set(["agent_session", "job_entrypoint"]);

/** Whether a span names the session by a key of its own (not the trace id). */
export const namesSession = (s: Span) => str(s.attributes, "gen_ai.conversation.id") !== null || str(s.attributes, "lk.job_id") !== null;

/** A span with what its resource says. */
export interface FreshSpan extends Span {
  project: string | null;
  /** Python's livekit-agents gives the user-turn delays in seconds, Node's in ms (telemetry.sdk.language). */
  python: boolean;
}

export interface TraceIdentity {
  sessionId: string;
  roomName: string | null;
  agentId: string | null;
}

/** A request record as /v1/ingest takes it (src/ingest/records.ts), built in process. */
export type OtlpRecord = {
  id: string;
  timestamp: number;
  modality: "llm" | "tts" | "stt";
  model_id: string;
  provider: string;
  status: "success" | "error";
  error_message?: string | null;
  project?: string | null;
  session_id: string;
  room_name?: string | null;
  agent_id?: string | null;
  ttfb_ms?: number | null;
  total_latency_ms?: number | null;
  input_tokens?: number | null;
  output_tokens?: number | null;
  cached_input_tokens?: number | null;
  audio_seconds?: number | null;
  characters?: number | null;
  metadata: Record<string, unknown>;
};

export interface OtlpTurn {
  session_id: string;
  turn_index: number;
  caller_speak_start_ms: number;
  caller_speak_end_ms: number;
  agent_speak_start_ms: number | null;
  agent_speak_end_ms: number | null;
  response_speed_ms: number | null;
  room_name: string | null;
}

/** Session, room and agent a trace's spans name (first found wins; the caller fixes them per trace). */
export function identityOf(traceId: string, spans: readonly Span[], resource: Attrs): TraceIdentity {
  const service = str(resource, "service.name");
  return {
    sessionId: firstAttr(spans, "gen_ai.conversation.id") ?? firstAttr(spans, "lk.job_id") ?? traceId,
    roomName: firstAttr(spans, "lk.pii.room_name"),
    agentId:
      str(resource, "voxgate.agent_id") ??
      firstAttr(spans, "voxgate.agent_id") ??
      firstAttr(spans, "lk.agent_name") ??
      firstAttr(spans, "gen_ai.agent.name") ??
      (service && !service.startsWith("unknown_service") ? service.slice(0, 256) : null),
  };
}

/** The first span's non-empty string value of `key`, cut to 256 characters. */
function firstAttr(spans: readonly Span[], key: string): string | null {
  for (const s of spans) {
    const v = str(s.attributes, key);
    if (v !== null) return v.slice(0, 256);
  }
  return null;
}

/** A UUID from tenant, trace, span and what was derived from the span (stable across re-sends). */
export function recordId(tenantId: string | null, traceId: string, spanId: string, what: string): string {
  // One-shot hash: a Hash object per record showed in the receiver's CPU profile.
  const h = hash("sha256", `otlp\u0000${tenantId ?? ""}\u0000${traceId}\u0000${spanId}\u0000${what}`, "hex");
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-8${h.slice(13, 16)}-${((Number.parseInt(h[16] ?? "0", 16) & 0x3) | 0x8).toString(16)}${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

/**
 * The provider a LiveKit plugin label names: Node's "deepgram.STT" → deepgram, Python's
 * "livekit.plugins.deepgram.stt.STT" → deepgram; a plain name as is.
 */
export function providerOfLabel(label: string): string {
  const parts = label.split(".");
  if (parts[0] === "livekit" && parts[1] === "plugins" && parts[2]) return parts[2];
  return parts[0] ?? label;
}

/** provider/model from what a span says, lower-cased provider ("Cartesia" → cartesia, "deepgram.STT" → deepgram). */
export function modelOf(provider: string | null, model: string | null, label: string | null): { model_id: string; provider: string } {
  const named = provider ?? (label?.includes(".") ? label : null);
  const p = (named ? providerOfLabel(named) : "unknown").trim().toLowerCase().slice(0, 128) || "unknown";
  const m = (model ?? label ?? "unknown").trim().slice(0, 200) || "unknown";
  return { model_id: m.includes("/") ? m : `${p}/${m}`, provider: p };
}

interface Tree {
  byId: Map<string, Span>;
  children: Map<string, Span[]>;
}

function treeOf(spans: readonly Span[]): Tree {
  const byId = new Map<string, Span>();
  const children = new Map<string, Span[]>();
  for (const s of spans) byId.set(s.spanId, s);
  for (const s of byId.values()) {
    if (s.parentSpanId === null) continue;
    const list = children.get(s.parentSpanId);
    if (list) list.push(s);
    else children.set(s.parentSpanId, [s]);
  }
  return { byId, children };
}

/** Whether a span named `name` sits anywhere below `span` (the wrappers of nested request spans). */
function hasDescendantNamed(tree: Tree, span: Span, name: string): boolean {
  const stack = [...(tree.children.get(span.spanId) ?? [])];
  const seen = new Set<string>();
  while (stack.length > 0) {
    const s = stack.pop() as Span;
    if (seen.has(s.spanId)) continue;
    seen.add(s.spanId);
    if (s.name === name) return true;
    stack.push(...(tree.children.get(s.spanId) ?? []));
  }
  return false;
}

const childNamed = (tree: Tree, span: Span, name: string) => (tree.children.get(span.spanId) ?? []).find((c) => c.name === name) ?? null;

export interface TraceInput {
  tenantId: string | null;
  identity: TraceIdentity;
  /** Spans of this trace already mapped (from earlier batches). */
  stored: readonly Span[];
  /** Spans of this trace to map now: this batch's, and earlier ones that waited for the session. */
  fresh: readonly FreshSpan[];
}

/**
 * The records of the batch's own spans, and the turns that became complete with this batch (a turn
 * whose halves came in two batches is emitted when the second arrives; one already complete before
 * is left to the idempotent store).
 */
export function mapTrace(input: TraceInput): { records: OtlpRecord[]; turns: OtlpTurn[] } {
  const all = [...input.stored, ...input.fresh];
  const tree = treeOf(all);
  const records: OtlpRecord[] = [];
  for (const span of input.fresh) {
    const record = recordOf(input, tree, span);
    if (record) records.push(record);
  }
  const before = input.stored.length === 0 ? new Map<string, OtlpTurn>() : turnsOf(treeOf(input.stored), input.identity);
  const now = turnsOf(tree, input.identity);
  const turns = [...now].filter(([userTurnId]) => !before.has(userTurnId)).map(([, t]) => t);
  return { records, turns };
}

/** Spans turn pairing reads from earlier batches (turnsOf, committedSpeech), with the closing spans. */
const PAIRING_SPANS = new Set(["user_turn", "user_speaking", "agent_turn", "agent_speaking", ...CLOSING_SPANS]);
/** Request spans and their runs: a wrapper (`llm_request → llm_request_run → llm_request`) is told by the spans below it. */
const REQUEST_SPANS = new Set(["llm_request", "llm_request_run", "tts_request", "tts_request_run"]);

/**
 * Of a mapped trace's new spans, the ones a later batch's mapping reads, to be kept in otlp_spans: the
 * spans turn pairing reads (user and agent turns, their speech, the closing spans), and request spans
 * a wrapper still to come may sit above (their chain of request spans ends at a parent not yet
 * received). Nothing else is read back: a span's record reads its descendants, which end before it
 * (so are in the same or an earlier batch), and its tts_node ancestor, which ends after it. Once the
 * agent_session span is in, every span of the session is (it ends after all of them): only the
 * closing spans are kept, so a re-sent or late span sees the trace closed.
 */
export function spansToKeep(stored: readonly Span[], fresh: readonly FreshSpan[]): FreshSpan[] {
  const over = stored.some((s) => s.name === "agent_session") || fresh.some((s) => s.name === "agent_session");
  if (over) return fresh.filter((s) => CLOSING_SPANS.has(s.name));
  const byId = new Map<string, Span>();
  for (const s of stored) byId.set(s.spanId, s);
  for (const s of fresh) byId.set(s.spanId, s);
  return fresh.filter((s) => PAIRING_SPANS.has(s.name) || (REQUEST_SPANS.has(s.name) && mayBeWrapped(byId, s)));
}

/** Whether a request span's chain of request-span parents ends at a parent not received yet (which may be a wrapper). */
function mayBeWrapped(byId: ReadonlyMap<string, Span>, span: Span): boolean {
  let cur = span;
  for (let hops = 0; hops < 64; hops++) {
    if (cur.parentSpanId === null) return false;
    const parent = byId.get(cur.parentSpanId);
    if (!parent) return true;
    if (!REQUEST_SPANS.has(parent.name)) return false;
    cur = parent;
  }
  return true;
}

/** The fields every record of a span has. */
function baseRecord(input: TraceInput, span: FreshSpan, modality: OtlpRecord["modality"], model: { model_id: string; provider: string }): OtlpRecord {
  return {
    id: recordId(input.tenantId, span.traceId, span.spanId, modality),
    timestamp: Math.round(span.startMs),
    modality,
    model_id: model.model_id,
    provider: model.provider,
    status: span.statusCode === 2 ? "error" : "success",
    error_message: span.statusCode === 2 ? span.statusMessage.slice(0, 4096) || null : null,
    project: span.project,
    session_id: input.identity.sessionId,
    room_name: input.identity.roomName,
    agent_id: input.identity.agentId,
    metadata: { source: "otlp", trace_id: span.traceId, span_id: span.spanId, span_name: span.name },
  };
}

function recordOf(input: TraceInput, tree: Tree, span: FreshSpan): OtlpRecord | null {
  const a = span.attributes;
  const realtime = readMetrics(a, "lk.realtime_model_metrics");
  if (realtime) {
    const r = baseRecord(input, span, "llm", modelOf(realtime.modelProvider ?? str(a, "gen_ai.provider.name"), realtime.modelName ?? str(a, "gen_ai.request.model"), realtime.label));
    r.input_tokens = num(a, "gen_ai.usage.input_tokens") ?? realtime.inputTokens;
    r.output_tokens = num(a, "gen_ai.usage.output_tokens") ?? realtime.outputTokens;
    r.cached_input_tokens = num(a, "gen_ai.usage.cache_read.input_tokens") ?? realtime.cachedInputTokens;
    r.ttfb_ms = realtime.ttfbMs;
    r.total_latency_ms = realtime.durationMs;
    // The audio/text split of a speech-to-speech model, as the agent reported it.
    r.metadata.input_audio_tokens = num(a, "gen_ai.usage.audio.input_tokens") ?? realtime.inputAudioTokens;
    r.metadata.output_audio_tokens = num(a, "gen_ai.usage.audio.output_tokens") ?? realtime.outputAudioTokens;
    r.metadata.input_text_tokens = num(a, "gen_ai.usage.text.input_tokens") ?? realtime.inputTextTokens;
    r.metadata.output_text_tokens = num(a, "gen_ai.usage.text.output_tokens") ?? realtime.outputTextTokens;
    return r;
  }
  if (span.name === "llm_request") {
    if (hasDescendantNamed(tree, span, "llm_request")) return null; // a fallback or retry wrapper
    const m = readMetrics(a, "lk.llm_metrics");
    const r = baseRecord(
      input,
      span,
      "llm",
      modelOf(str(a, "gen_ai.provider.name") ?? m?.modelProvider ?? null, str(a, "gen_ai.request.model") ?? m?.modelName ?? null, m?.label ?? null),
    );
    r.input_tokens = num(a, "gen_ai.usage.input_tokens") ?? m?.inputTokens ?? null;
    r.output_tokens = num(a, "gen_ai.usage.output_tokens") ?? m?.outputTokens ?? null;
    r.cached_input_tokens = num(a, "gen_ai.usage.cache_read.input_tokens") ?? num(a, "gen_ai.usage.input_cached_tokens") ?? m?.cachedInputTokens ?? null;
    const ttfc = num(a, "gen_ai.response.time_to_first_chunk");
    r.ttfb_ms = ttfc !== null && ttfc >= 0 ? ttfc * 1000 : (m?.ttfbMs ?? null);
    r.total_latency_ms = m?.durationMs ?? Math.round(span.endMs - span.startMs);
    if (m?.cancelled) r.metadata.cancelled = true;
    return r;
  }
  if (span.name === "tts_request") {
    if (hasDescendantNamed(tree, span, "tts_request")) return null; // the stream adapter's wrapper
    const m = readMetrics(a, "lk.tts_metrics");
    const node = ancestorNamed(tree, span, "tts_node");
    const r = baseRecord(
      input,
      span,
      "tts",
      modelOf(
        m?.modelProvider ?? (node ? str(node.attributes, "gen_ai.provider.name") : null),
        m?.modelName ?? (node ? str(node.attributes, "gen_ai.request.model") : null),
        m?.label ?? str(a, "lk.tts.label"),
      ),
    );
    r.characters = m?.characters ?? null;
    r.ttfb_ms = m?.ttfbMs ?? null;
    r.total_latency_ms = m?.durationMs ?? Math.round(span.endMs - span.startMs);
    if (m?.audioDurationMs != null) r.metadata.audio_duration_ms = m.audioDurationMs;
    if (m?.cancelled) r.metadata.cancelled = true;
    return r;
  }
  if (span.name === "user_turn") {
    const speaking = committedSpeech(tree, span);
    if (!speaking) return null; // the empty user turn a session emits when it closes
    const r = baseRecord(input, span, "stt", modelOf(str(a, "gen_ai.provider.name"), str(a, "gen_ai.request.model"), null));
    // No runtime traces the STT request: the audio is estimated from the caller's speech span.
    r.audio_seconds = Math.round(Math.max(0, speaking.endMs - speaking.startMs)) / 1000;
    r.metadata.audio_seconds_estimated = true;
    const unit = span.python ? 1000 : 1;
    const delay = num(a, "lk.transcription_delay");
    if (delay !== null && delay >= 0) {
      r.metadata.transcription_delay_ms = delay * unit;
      r.ttfb_ms = delay * unit;
    }
    const eot = num(a, "lk.end_of_turn_delay");
    if (eot !== null && eot >= 0) r.metadata.end_of_turn_delay_ms = eot * unit;
    const confidence = num(a, "lk.transcript_confidence");
    if (confidence !== null) r.metadata.transcript_confidence = confidence;
    return r;
  }
  return null;
}

function ancestorNamed(tree: Tree, span: Span, name: string): Span | null {
  let cur: Span | undefined = span;
  for (let hops = 0; cur && hops < 64; hops++) {
    if (cur !== span && cur.name === name) return cur;
    cur = cur.parentSpanId === null ? undefined : tree.byId.get(cur.parentSpanId);
  }
  return null;
}

/** The caller's speech of a committed user turn; null for the empty turn of a closing session. */
function committedSpeech(tree: Tree, userTurn: Span): Span | null {
  if (userTurn.attributes["lk.pii.user_transcript"] === "") return null;
  return childNamed(tree, userTurn, "user_speaking");
}

/**
 * Turns keyed by their user_turn span id: each committed user turn (caller speech from its
 * user_speaking) paired with the first agent_turn that starts after the caller started and before
 * the next committed user turn's speech (agent speech from its agent_speaking). A turn is complete,
 * and returned, once its agent turn is known, or a later user turn shows none came, or the session
 * span (sent at close) is in.
 */
function turnsOf(tree: Tree, identity: TraceIdentity): Map<string, OtlpTurn> {
  const spans = [...tree.byId.values()];
  const users = spans
    .filter((s) => s.name === "user_turn")
    .map((u) => ({ turn: u, speech: committedSpeech(tree, u) }))
    .filter((u): u is { turn: Span; speech: Span } => u.speech !== null)
    .sort((x, y) => x.speech.startMs - y.speech.startMs);
  const agents = spans.filter((s) => s.name === "agent_turn").sort((x, y) => x.startMs - y.startMs);
  const closed = spans.some((s) => CLOSING_SPANS.has(s.name));
  const out = new Map<string, OtlpTurn>();
  users.forEach((u, i) => {
    const next = users[i + 1];
    const agent = agents.find((a) => a.startMs >= u.speech.startMs && (!next || a.startMs < next.speech.startMs)) ?? null;
    if (!agent && !next && !closed) return; // the answer may still come in a later batch
    const speaking = agent ? childNamed(tree, agent, "agent_speaking") : null;
    const callerEnd = Math.round(u.speech.endMs);
    const agentStart = speaking ? Math.round(speaking.startMs) : null;
    out.set(u.turn.spanId, {
      session_id: identity.sessionId,
      turn_index: i,
      caller_speak_start_ms: Math.round(u.speech.startMs),
      caller_speak_end_ms: callerEnd,
      agent_speak_start_ms: agentStart,
      agent_speak_end_ms: speaking ? Math.max(agentStart ?? 0, Math.round(speaking.endMs)) : null,
      response_speed_ms: agentStart === null ? null : Math.max(0, agentStart - callerEnd),
      room_name: identity.roomName,
    });
  });
  return out;
}
