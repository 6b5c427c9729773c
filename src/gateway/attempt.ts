import type { RequestRecord } from "../client/types.js";
import type { Attribution } from "./attribution.js";
import type { Gateway } from "./gateway.js";
import type { ProxyRoute, Units, UpstreamTarget } from "./protocol.js";

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
}

const round2 = (n: number) => Math.round(n * 100) / 100;

/** The attempt as a request record (the fields of docs/api/ingest.md), handed to the recorder: never awaited. */
export function recordAttempt(ctx: CallContext, a: Attempt): void {
  const u = a.units;
  const record: RequestRecord = {
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
  if (u.audioSeconds !== undefined) record.audio_seconds = u.audioSeconds;
  if (u.characters !== undefined) record.characters = u.characters;
  if (ctx.throttledFrom !== null || a.status !== "success") {
    record.metadata = { via: "gateway", ...(ctx.throttledFrom !== null && { budget_action: "throttle", requested_model: ctx.throttledFrom }) };
  }
  ctx.gw.recorder.record(ctx.tenantId, record);
}

/** A failed upstream attempt, told apart for the answer: timeout before the first byte, or not reachable. */
export function failureOf(err: unknown): { timeout: boolean; message: string } {
  const e = err as { code?: string; name?: string; message?: string };
  const code = e.code ?? e.name ?? "error";
  const timeout = code === "UND_ERR_HEADERS_TIMEOUT" || code === "UND_ERR_CONNECT_TIMEOUT";
  if (timeout) return { timeout, message: "no answer before the first-byte timeout" };
  return { timeout, message: `upstream not reachable (${code})` };
}
