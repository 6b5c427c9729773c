import { type Attributes, type Context, createTraceState, isSpanContextValid, ROOT_CONTEXT, SpanKind, SpanStatusCode, type Tracer, trace } from "@opentelemetry/api";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-proto";
import { resourceFromAttributes } from "@opentelemetry/resources";
import { BasicTracerProvider, BatchSpanProcessor } from "@opentelemetry/sdk-trace-base";
import type { RateCardStore } from "../billing/rate-card-store.js";
import type { TraceExport } from "../config/env.js";
import { typedRequestRow } from "../ingest/records.js";
import { VERSION } from "../version.js";
import type { GatewayRecord } from "./recorder.js";
import type { SpanWriter } from "./span-sink.js";

/*
 * Voxgate's own gateway calls as OpenTelemetry GenAI client spans (semantic conventions for GenAI:
 * gen_ai.operation.name, gen_ai.provider.name, gen_ai.request.model, gen_ai.usage.*). Only this module
 * imports the OTel SDK, and only span-sink.ts's loader imports this module (dynamically), so a
 * process without OTEL_EXPORTER_OTLP_ENDPOINT never loads it. A record holds no prompt, answer or
 * audio, and neither does its span; error messages stay out too (error.type is a short class).
 */

/** The GenAI operation of each modality (chat is the convention's; the speech ones are Voxgate's own). */
const OPERATION = { llm: "chat", stt: "speech_to_text", tts: "text_to_speech" } as const;

/** gen_ai.provider.name's well-known values where a vendor has one; other vendors by their own name. */
const PROVIDER_NAME: Record<string, string> = { openai: "openai", openai_compatible: "openai", groq: "groq", anthropic: "anthropic", gemini: "gcp.gemini" };

/**
 * Spans queue in memory and go out in batches: a busy gateway makes thousands a second, and the
 * SDK's defaults (2,048 queued, every 5 s) would drop most of them.
 */
const QUEUE = { maxQueueSize: 65_536, maxExportBatchSize: 2048, scheduledDelayMillis: 1000 };

const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/;

/** The caller's W3C trace context as the parent context, or the root when absent or malformed (a new trace). */
export function parentContext(traceparent: string | null, tracestate: string | null): Context {
  const m = traceparent === null ? null : TRACEPARENT.exec(traceparent.trim().toLowerCase());
  // Version ff is invalid; version 00 has nothing after the flags (later versions may, W3C §3.2.4).
  if (!m || m[1] === "ff" || (m[1] === "00" && m[5] !== undefined)) return ROOT_CONTEXT;
  const sc = { traceId: m[2] as string, spanId: m[3] as string, traceFlags: Number.parseInt(m[4] as string, 16) & 0xff, isRemote: true };
  if (!isSpanContextValid(sc)) return ROOT_CONTEXT;
  return trace.setSpanContext(ROOT_CONTEXT, tracestate ? { ...sc, traceState: createTraceState(tracestate) } : sc);
}

/** error.type: a short, low-cardinality class of a failed call (an HTTP status, a socket code, a Voxgate code), never its message. */
export function errorType(message: string | undefined): string {
  if (!message) return "_OTHER";
  const status = /^upstream answered (\d{3})/.exec(message);
  if (status) return status[1] as string;
  if (message.startsWith("no answer before the first-byte timeout")) return "timeout";
  const code = /\(([A-Z][A-Z0-9_]+)\)$/.exec(message);
  if (code) return code[1] as string;
  const prefix = /^([a-z_]+):/.exec(message);
  if (prefix) return prefix[1] as string;
  if (message.startsWith("refused in-band")) return "refused";
  if (message.startsWith("client disconnected")) return "client_disconnected";
  return "_OTHER";
}

/** One span's attributes from a record and its rated cost. */
export function spanAttributes(r: GatewayRecord, costUsd: number | null): Attributes {
  const rec = r.record;
  const t = r.trace;
  const a: Attributes = {
    "gen_ai.operation.name": OPERATION[rec.modality],
    "gen_ai.provider.name": t ? (PROVIDER_NAME[t.providerType] ?? t.providerType) : (rec.provider ?? "unknown"),
    "gen_ai.request.model": t?.model ?? rec.model_id,
    "voxgate.model_id": rec.model_id,
    "voxgate.provider": rec.provider ?? "",
    "voxgate.project": rec.project ?? "default",
    "voxgate.request_id": rec.id,
    "voxgate.status": rec.status ?? "success",
  };
  if (r.tenantId !== null) a["voxgate.tenant"] = r.tenantId;
  if (costUsd !== null) a["voxgate.cost_usd"] = costUsd;
  if (rec.session_id) a["gen_ai.conversation.id"] = rec.session_id;
  if (rec.input_tokens != null) a["gen_ai.usage.input_tokens"] = rec.input_tokens;
  if (rec.output_tokens != null) a["gen_ai.usage.output_tokens"] = rec.output_tokens;
  if (rec.cached_input_tokens != null) a["gen_ai.usage.cache_read.input_tokens"] = rec.cached_input_tokens;
  if (rec.input_audio_tokens != null) a["voxgate.usage.input_audio_tokens"] = rec.input_audio_tokens;
  if (rec.output_audio_tokens != null) a["voxgate.usage.output_audio_tokens"] = rec.output_audio_tokens;
  if (rec.audio_seconds != null) a["voxgate.usage.audio_seconds"] = rec.audio_seconds;
  if (rec.characters != null) a["voxgate.usage.characters"] = rec.characters;
  // Seconds, as LiveKit's own llm_request spans carry it.
  if (rec.ttfb_ms != null) a["gen_ai.response.time_to_first_chunk"] = rec.ttfb_ms / 1000;
  if (rec.fallback_from) a["voxgate.fallback_from"] = rec.fallback_from;
  const streamId = rec.metadata?.stream_id;
  if (typeof streamId === "string") a["voxgate.stream_id"] = streamId;
  if (rec.status === "error") a["error.type"] = errorType(rec.error_message ?? undefined);
  return a;
}

/** Ends one client span per record, timed by the record (start = its timestamp, end = + total latency). */
function emit(tracer: Tracer, r: GatewayRecord, costUsd: number | null): void {
  const rec = r.record;
  const start = rec.timestamp instanceof Date ? rec.timestamp.getTime() : rec.timestamp;
  const attributes = spanAttributes(r, costUsd);
  const parent = r.trace ? parentContext(r.trace.traceparent, r.trace.tracestate) : ROOT_CONTEXT;
  const span = tracer.startSpan(`${attributes["gen_ai.operation.name"]} ${attributes["gen_ai.request.model"]}`, { kind: SpanKind.CLIENT, startTime: start, attributes }, parent);
  if (rec.status === "error") span.setStatus({ code: SpanStatusCode.ERROR });
  span.end(start + (rec.total_latency_ms ?? 0));
}

/**
 * The span writer of src/gateway/span-sink.ts: an SDK tracer provider with a batch processor and the
 * OTLP/HTTP protobuf exporter, configured from src/config/env.ts's reading of the standard variables.
 * Each record's cost is rated as ingest rates it (the same function, the rate card in memory).
 */
export function genaiSpanWriter(target: TraceExport, rateCard: Pick<RateCardStore, "snapshot">): SpanWriter {
  const exporter = new OTLPTraceExporter({ url: target.url, headers: target.headers });
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({ "service.name": target.serviceName, "service.version": VERSION }),
    spanProcessors: [new BatchSpanProcessor(exporter, QUEUE)],
  });
  const tracer = provider.getTracer("voxgate", VERSION);
  return {
    write(batch) {
      const { card, catalog } = rateCard.snapshot();
      for (const r of batch) {
        const rated = typedRequestRow(r.record, r.tenantId, card, catalog);
        const cost = rated.ok && rated.row.cost_usd !== null ? Number(rated.row.cost_usd) : null;
        emit(tracer, r, cost);
      }
    },
    flush: () => provider.forceFlush(),
    shutdown: () => provider.shutdown(),
  };
}
