import { context, type Span, trace } from "@opentelemetry/api";
import { ExportResultCode } from "@opentelemetry/core";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-proto";
import { JsonTraceSerializer, ProtobufTraceSerializer } from "@opentelemetry/otlp-transformer";
import { resourceFromAttributes } from "@opentelemetry/resources";
import { BasicTracerProvider, InMemorySpanExporter, type ReadableSpan, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base";

/**
 * Spans built with the real OpenTelemetry SDK (ids, times, resource, parentage as the SDK makes
 * them), named and attributed exactly as LiveKit Agents does (see the shapes in the tests), and
 * collected in memory so a test decides how they are split into export batches.
 */
export class SpanScript {
  readonly memory = new InMemorySpanExporter();
  readonly provider: BasicTracerProvider;
  private readonly tracer;
  constructor(resource: Record<string, string> = { "service.name": "voice-agent", "telemetry.sdk.language": "nodejs" }) {
    this.provider = new BasicTracerProvider({ resource: resourceFromAttributes(resource), spanProcessors: [new SimpleSpanProcessor(this.memory)] });
    this.tracer = this.provider.getTracer("livekit-agents");
  }

  /** Starts a span at `startMs` (epoch ms) under `parent`. */
  start(name: string, startMs: number, attributes: Record<string, string | number | boolean> = {}, parent?: Span): Span {
    const ctx = parent ? trace.setSpan(context.active(), parent) : context.active();
    return this.tracer.startSpan(name, { startTime: startMs, attributes }, ctx);
  }

  /** The spans ended so far, and forgets them (the next call returns only newer ones). */
  take(): ReadableSpan[] {
    const spans = this.memory.getFinishedSpans();
    this.memory.reset();
    return [...spans];
  }
}

/** Sends spans with the real OTLP/HTTP protobuf exporter, as an agent's BatchSpanProcessor does. */
export async function exportSpans(url: string, key: string | undefined, spans: ReadableSpan[], headers: Record<string, string> = {}): Promise<void> {
  const exporter = new OTLPTraceExporter({ url, headers: { ...(key ? { authorization: `Bearer ${key}` } : {}), ...headers } });
  const result = await new Promise<{ code: number; error?: Error }>((resolve) => exporter.export(spans, resolve));
  await exporter.shutdown();
  if (result.code !== ExportResultCode.SUCCESS) throw result.error ?? new Error("export failed");
}

/** The body the proto exporter sends, for tests that look at the HTTP answer itself. */
export const protobufBody = (spans: ReadableSpan[]): Uint8Array<ArrayBuffer> => new Uint8Array(ProtobufTraceSerializer.serializeRequest(spans) ?? []);
/** The same request in OTLP/JSON. */
export const jsonBody = (spans: ReadableSpan[]): Uint8Array<ArrayBuffer> => new Uint8Array(JsonTraceSerializer.serializeRequest(spans) ?? []);

export const llmMetricsNode = (o: { promptTokens: number; completionTokens: number; ttftMs: number; durationMs: number; model: string; provider: string }) =>
  JSON.stringify({
    type: "llm_metrics",
    timestamp: Date.now(),
    requestId: "req_1",
    ttftMs: o.ttftMs,
    durationMs: o.durationMs,
    cancelled: false,
    label: "openai.LLM",
    promptTokens: o.promptTokens,
    completionTokens: o.completionTokens,
    promptCachedTokens: 0,
    cacheCreationTokens: 0,
    totalTokens: o.promptTokens + o.completionTokens,
    tokensPerSecond: 10,
    metadata: { modelProvider: o.provider, modelName: o.model },
  });

export const ttsMetricsNode = (o: { characters: number; ttfbMs: number; durationMs: number; audioDurationMs: number; model: string; provider: string }) =>
  JSON.stringify({
    type: "tts_metrics",
    timestamp: Date.now(),
    requestId: "tts_1",
    ttfbMs: o.ttfbMs,
    durationMs: o.durationMs,
    audioDurationMs: o.audioDurationMs,
    charactersCount: o.characters,
    inputTokens: 0,
    outputTokens: 0,
    streamed: true,
    cancelled: false,
    label: `${o.provider}.TTS`,
    metadata: { modelProvider: o.provider, modelName: o.model },
  });
