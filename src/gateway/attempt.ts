import type { IncomingHttpHeaders } from "node:http";
import type { TypedRecord } from "../ingest/records.js";
import type { Attribution } from "./attribution.js";
import type { Gateway } from "./gateway.js";
import type { ProxyRoute, Units, UpstreamTarget } from "./protocol.js";
import type { CallTrace } from "./recorder.js";

/** The caller's W3C trace context headers, kept only when the gateway exports spans. */
export type CallerTrace = Omit<CallTrace, "providerType" | "model">;

/** Null unless spans are exported: with export off, a call reads no header for it. */
export function callerTrace(gw: Gateway, headers: IncomingHttpHeaders): CallerTrace | null {
  if (!gw.exportsSpans) return null;
  const { traceparent, tracestate } = headers;
  return { traceparent: typeof traceparent === "string" ? traceparent : null, tracestate: typeof tracestate === "string" ? tracestate : null };
}

/** What one call knows that every attempt's record shares. */
export interface CallContext {
  gw: Gateway;
  route: Pick<ProxyRoute, "modality">;
  tenantId: string | null;
  attribution: Attribution;
  /** Epoch ms when the call arrived (the record's timestamp). */
  startedAt: number;
  /** performance.now() when the call arrived: TTFB and latency are measured from it (monotonic). */
  t0: number;
  /** The model the caller named when a throttled project was served by its throttle_stack. */
  throttledFrom: string | null;
  /** Set when spans are exported (callerTrace). */
  trace: CallerTrace | null;
}

/** Queues one record of this call, with its span's trace context when spans are exported. */
export function queueRecord(ctx: CallContext, record: TypedRecord, target: UpstreamTarget): void {
  if (ctx.trace === null) ctx.gw.recorder.record(ctx.tenantId, record);
  else ctx.gw.recorder.record(ctx.tenantId, record, { ...ctx.trace, providerType: target.providerType, model: target.modelName });
}

/** One try of one model: becomes one request record. */
export interface Attempt {
  /** The record id (the answering attempt's is X-Voxgate-Request-Id). */
  id: string;
  target: UpstreamTarget;
  status: "success" | "error" | "fallback";
  fallbackFrom?: string;
  error?: string;
  ttfbMs?: number | null;
  units: Units;
  /** Extra record metadata (a governed stream's `ended_by`). */
  metadata?: Record<string, unknown>;
}

const round2 = (n: number) => Math.round(n * 100) / 100;

/** The attempt as a request record (the fields of docs/api/ingest.md), handed to the recorder: never awaited. */
export function recordAttempt(ctx: CallContext, a: Attempt): void {
  const u = a.units;
  const record: TypedRecord = {
    id: a.id,
    timestamp: ctx.startedAt,
    modality: a.target.modality,
    model_id: a.target.modelId,
    provider: a.target.providerId,
    status: a.status,
    project: ctx.attribution.project,
    total_latency_ms: round2(performance.now() - ctx.t0),
  };
  if (ctx.attribution.sessionId !== null) record.session_id = ctx.attribution.sessionId;
  if (a.error) record.error_message = a.error.slice(0, 2000);
  if (a.fallbackFrom) record.fallback_from = a.fallbackFrom;
  if (a.ttfbMs != null) record.ttfb_ms = round2(a.ttfbMs);
  if (u.inputTokens !== undefined) record.input_tokens = u.inputTokens;
  if (u.outputTokens !== undefined) record.output_tokens = u.outputTokens;
  if (u.cachedInputTokens !== undefined) record.cached_input_tokens = u.cachedInputTokens;
  if (u.inputAudioTokens !== undefined) record.input_audio_tokens = u.inputAudioTokens;
  if (u.outputAudioTokens !== undefined) record.output_audio_tokens = u.outputAudioTokens;
  if (u.audioSeconds !== undefined) record.audio_seconds = u.audioSeconds;
  if (u.characters !== undefined) record.characters = u.characters;
  if (ctx.throttledFrom !== null || a.status !== "success" || a.metadata || u.reasoningTokens !== undefined || u.billedSeconds !== undefined) {
    record.metadata = {
      via: "gateway",
      ...(ctx.throttledFrom !== null && { budget_action: "throttle", requested_model: ctx.throttledFrom }),
      ...(u.reasoningTokens !== undefined && { reasoning_tokens: u.reasoningTokens }),
      ...(u.billedSeconds !== undefined && { billed_seconds: u.billedSeconds }),
      ...a.metadata,
    };
  }
  queueRecord(ctx, record, a.target);
}

/**
 * Errors raised while the caller's own request is turned into the upstream one (a header or body the
 * HTTP client will not send): the caller's fault, never the provider's, so they never cool it down.
 */
const CALLER_FAULT_CODES = new Set([
  "UND_ERR_NOT_SUPPORTED",
  "UND_ERR_INVALID_ARG",
  "UND_ERR_REQ_CONTENT_LENGTH_MISMATCH",
  "ERR_INVALID_ARG_TYPE",
  "ERR_INVALID_ARG_VALUE",
  "ERR_INVALID_CHAR",
  "ERR_INVALID_HTTP_TOKEN",
  "ERR_HTTP_INVALID_HEADER_VALUE",
]);

/**
 * A failed upstream attempt, told apart for the answer: timeout before the first byte, not reachable,
 * or a request the caller made unsendable (`callerFault`: a 400, no cooldown, no fallback).
 */
export function failureOf(err: unknown): { timeout: boolean; callerFault: boolean; message: string } {
  const e = err as { code?: string; name?: string; message?: string };
  const code = e.code ?? e.name ?? "error";
  const timeout = code === "UND_ERR_HEADERS_TIMEOUT" || code === "UND_ERR_CONNECT_TIMEOUT";
  if (timeout) return { timeout, callerFault: false, message: "no answer before the first-byte timeout" };
  if (CALLER_FAULT_CODES.has(code)) return { timeout, callerFault: true, message: `the request could not be sent upstream (${code})` };
  return { timeout, callerFault: false, message: `upstream not reachable (${code})` };
}
