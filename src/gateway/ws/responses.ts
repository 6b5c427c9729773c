import { randomUUID } from "node:crypto";
import { performance } from "node:perf_hooks";
import type { TypedRecord } from "../../ingest/records.js";
import { type Attempt, type CallContext, queueRecord } from "../attempt.js";
import type { Units } from "../protocol.js";
import type { StreamMeter } from "./relay.js";

/** One unit of work of a session recorded on its own (an OpenAI realtime response). */
export interface ResponseWork {
  responseId: string | null;
  /** Epoch ms when the work was asked for (the record's timestamp). */
  startedAt: number;
  /** performance.now() at the same instant: TTFB and latency are measured from it. */
  t0: number;
  ttfbMs: number | null;
  units: Units;
  status: "success" | "error";
  error?: string;
}

/**
 * A stream meter whose session is recorded per response rather than once per stream: it calls
 * onResponse as each response completes, and hands over the responses still in flight when the
 * session ends (recorded as errors with what is known of their usage).
 */
export interface ResponseMeter extends StreamMeter {
  onResponse: ((work: ResponseWork) => void) | null;
  unfinished(): ResponseWork[];
}

export function isResponseMeter(meter: StreamMeter): meter is ResponseMeter {
  return "onResponse" in meter;
}

const round2 = (v: number) => Math.round(v * 100) / 100;

/**
 * Records a session's responses: one request record per response (modality and model of the stream,
 * metadata.stream_id = the stream's request id, metadata.response_id the vendor's), the first under
 * the stream's own request id. end() records the responses still in flight as errors.
 */
export function recordResponses(meter: ResponseMeter, ctx: CallContext, attempt: Attempt): { end(): void } {
  let count = 0;
  const record = (w: ResponseWork) => {
    const t = attempt.target;
    const u = w.units;
    const rec: TypedRecord = {
      id: count++ === 0 ? attempt.id : randomUUID(),
      timestamp: w.startedAt,
      modality: t.modality,
      model_id: t.modelId,
      provider: t.providerId,
      status: w.status === "error" ? "error" : attempt.status,
      project: ctx.attribution.project,
      total_latency_ms: round2(performance.now() - w.t0),
      metadata: { via: "gateway", stream_id: attempt.id, ...(w.responseId !== null && { response_id: w.responseId }) },
      ...(attempt.fallbackFrom && { fallback_from: attempt.fallbackFrom }),
      ...(ctx.attribution.sessionId !== null && { session_id: ctx.attribution.sessionId }),
      ...(w.error !== undefined && { error_message: w.error.slice(0, 2000) }),
      ...(w.ttfbMs !== null && { ttfb_ms: round2(w.ttfbMs) }),
      ...(u.inputTokens !== undefined && { input_tokens: u.inputTokens }),
      ...(u.outputTokens !== undefined && { output_tokens: u.outputTokens }),
      ...(u.cachedInputTokens !== undefined && { cached_input_tokens: u.cachedInputTokens }),
      ...(u.inputAudioTokens !== undefined && { input_audio_tokens: u.inputAudioTokens }),
      ...(u.outputAudioTokens !== undefined && { output_audio_tokens: u.outputAudioTokens }),
    };
    queueRecord(ctx, rec, t);
  };
  meter.onResponse = record;
  return {
    end() {
      meter.onResponse = null;
      for (const w of meter.unfinished()) record(w);
    },
  };
}
