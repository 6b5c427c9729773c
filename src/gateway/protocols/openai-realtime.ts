import { performance } from "node:perf_hooks";
import type { InboundRequest, Units, UpstreamTarget } from "../protocol.js";
import type { ResponseMeter, ResponseWork } from "../ws/responses.js";
import { forwardQuery, type WsRoute } from "../ws/ws-route.js";
import { modelQuery } from "./audio-common.js";
import { realtimeErrorEvent } from "./openai-audio.js";

type Auth = (t: UpstreamTarget) => Record<string, string>;

/** How far into a frame its `"type"` is looked for before the frame is parsed whole. */
const TYPE_WINDOW = 256;
const TYPE_RE = /"type"\s*:\s*"([a-z_.]+)"/;

/**
 * The event type of a realtime frame, read from its head without parsing it (audio frames carry tens
 * of kilobytes of base64 that only the vendor needs); null when the head holds no type.
 */
export function realtimeEventType(frame: Buffer): string | null {
  const head = frame.toString("latin1", 0, Math.min(frame.length, TYPE_WINDOW));
  return TYPE_RE.exec(head)?.[1] ?? null;
}

const n = (v: unknown): number | undefined => (typeof v === "number" && Number.isSafeInteger(v) && v >= 0 ? v : undefined);

/** A realtime `response.done`'s usage as units: input, output, cached input, and the audio splits. */
export function realtimeUsageUnits(usage: unknown): Units {
  if (!usage || typeof usage !== "object") return {};
  const u = usage as {
    input_tokens?: unknown;
    output_tokens?: unknown;
    input_token_details?: { cached_tokens?: unknown; audio_tokens?: unknown } | null;
    output_token_details?: { audio_tokens?: unknown } | null;
  };
  const out: Units = { inputTokens: n(u.input_tokens) ?? 0, outputTokens: n(u.output_tokens) ?? 0 };
  const cached = n(u.input_token_details?.cached_tokens);
  if (cached !== undefined) out.cachedInputTokens = cached;
  const audioIn = n(u.input_token_details?.audio_tokens);
  if (audioIn !== undefined) out.inputAudioTokens = audioIn;
  const audioOut = n(u.output_token_details?.audio_tokens);
  if (audioOut !== undefined) out.outputAudioTokens = audioOut;
  return out;
}

interface InFlight {
  id: string | null;
  startedAt: number;
  t0: number;
  ttfbMs: number | null;
  deltas: number;
}

/**
 * Meters a realtime conversation per response: a response starts at `response.created` (its clock at
 * the client's `response.create`, or the server's `input_audio_buffer.committed` when voice activity
 * started it), its TTFB is the first `response.*.delta`, and `response.done` hands the response's
 * usage to the session's recorder. Frames are read by their head; only small control frames are parsed.
 */
export function realtimeResponsesMeter(): ResponseMeter {
  let askedAt: { t0: number; at: number } | null = null;
  const inFlight: InFlight[] = [];
  const meter: ResponseMeter = {
    onResponse: null,
    client(frame, isBinary) {
      if (isBinary) return false;
      const type = realtimeEventType(frame);
      if (type === "response.create") {
        askedAt = { t0: performance.now(), at: Date.now() };
        return true;
      }
      return false;
    },
    upstream(frame, isBinary) {
      if (isBinary) return false;
      const type = realtimeEventType(frame);
      if (type === null) return false;
      if (type.startsWith("response.") && type.endsWith(".delta")) {
        const r = inFlight.at(-1);
        if (r) {
          r.deltas++;
          if (r.ttfbMs === null) r.ttfbMs = performance.now() - r.t0;
        }
        return true;
      }
      if (type === "input_audio_buffer.committed") {
        askedAt ??= { t0: performance.now(), at: Date.now() };
      } else if (type === "response.created") {
        const msg = parse(frame) as { response?: { id?: unknown } } | null;
        const start = askedAt ?? { t0: performance.now(), at: Date.now() };
        askedAt = null;
        inFlight.push({ id: typeof msg?.response?.id === "string" ? msg.response.id : null, startedAt: start.at, t0: start.t0, ttfbMs: null, deltas: 0 });
      } else if (type === "response.done") {
        const msg = parse(frame) as { response?: { id?: unknown; status?: unknown; usage?: unknown; status_details?: { error?: { message?: unknown } | null } | null } } | null;
        const res = msg?.response;
        const id = typeof res?.id === "string" ? res.id : null;
        const at = inFlight.findIndex((r) => r.id === id);
        const r = at >= 0 ? inFlight.splice(at, 1)[0] : inFlight.shift();
        const work: ResponseWork = {
          responseId: id,
          startedAt: r?.startedAt ?? Date.now(),
          t0: r?.t0 ?? performance.now(),
          ttfbMs: r?.ttfbMs ?? null,
          units: realtimeUsageUnits(res?.usage),
          status: res?.status === "failed" ? "error" : "success",
        };
        if (work.status === "error") {
          const m = res?.status_details?.error?.message;
          work.error = `response failed: ${typeof m === "string" ? m : "the vendor gave no reason"}`;
        }
        meter.onResponse?.(work);
      }
      return false;
    },
    units: () => ({}),
    unfinished() {
      return inFlight.splice(0).map((r) => ({
        responseId: r.id,
        startedAt: r.startedAt,
        t0: r.t0,
        ttfbMs: r.ttfbMs,
        // No usage came: the deltas seen (one token each) are what is known to have been served.
        units: { inputTokens: 0, outputTokens: r.deltas },
        status: "error" as const,
        error: "session ended before response.done",
      }));
    },
  };
  return meter;
}

function parse(frame: Buffer): unknown {
  try {
    return JSON.parse(frame.toString("utf8"));
  } catch {
    return null;
  }
}

/** The model a `session.update` names (`session.model`), else null. */
export function realtimeSessionModel(frame: string): string | null {
  if (!frame.includes("session.update") || !frame.includes('"model"')) return null;
  const msg = parse(Buffer.from(frame)) as { type?: unknown; session?: { model?: unknown } | null } | null;
  if (msg?.type !== "session.update" || typeof msg.session?.model !== "string") return null;
  return msg.session.model;
}

/** A `session.update` naming a model (`session.model`) rewritten to the routed model's name; other frames untouched. */
export function rewriteRealtimeSessionModel(frame: string, modelName: string): string {
  if (!frame.includes("session.update") || !frame.includes('"model"')) return frame;
  try {
    const msg = JSON.parse(frame) as { type?: unknown; session?: Record<string, unknown> };
    if (msg.type !== "session.update" || typeof msg.session !== "object" || msg.session === null) return frame;
    if (typeof msg.session.model !== "string" || msg.session.model === modelName) return frame;
    msg.session.model = modelName;
    return JSON.stringify(msg);
  } catch {
    return frame;
  }
}

/**
 * WebSocket /realtime without intent=transcription: a realtime conversation (speech to speech) with an
 * llm-modality realtime model named by `model` on the URL (or the project's stack). Frames pass both
 * ways unchanged except a `session.update`'s `session.model`, rewritten to the vendor's name; each
 * `response.done` is one request record.
 */
export function realtimeConversationRoute(auth: Auth): WsRoute {
  return {
    path: "/realtime",
    modality: "llm",
    accepts: (query) => query.get("intent") !== "transcription",
    model: (inbound: InboundRequest) => modelQuery(inbound),
    upstream: (inbound, target) => ({
      path: `/realtime${forwardQuery(inbound.query, { model: target.modelName })}`,
      headers: { ...auth(target), ...(inbound.headers["openai-beta"] ? { "openai-beta": String(inbound.headers["openai-beta"]) } : {}) },
    }),
    meter: () => realtimeResponsesMeter(),
    // A session.update naming the session's own model (by id or vendor name) goes on with the vendor's
    // name; one naming any other is answered in-band, not forwarded, and recorded refused: a model is
    // never silently replaced (one vendor socket runs one model).
    clientText: (target, models) => (frame) => {
      const named = realtimeSessionModel(frame);
      if (named === null || named === target.modelName || named === target.modelId) return rewriteRealtimeSessionModel(frame, target.modelName);
      const r = models.resolve(named);
      if (r.ok && r.target.modelId === target.modelId) return rewriteRealtimeSessionModel(frame, target.modelName);
      models.refuse(frame, named, r.ok ? "invalid_request" : r.code, r.ok ? `this session runs ${target.modelId}: open another session for ${r.target.modelId}` : r.message);
      return null;
    },
    errorFrame: (code, message, frame = null) => realtimeErrorEvent(frame, code, message),
  };
}
