import { initializeLogger, stt, telemetry, tts, voice } from "@livekit/agents";
import { AudioFrame } from "@livekit/rtc-node";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-proto";
import { BatchSpanProcessor, InMemorySpanExporter, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base";
import { NodeTracerProvider } from "@opentelemetry/sdk-trace-node";
import { ReadableStream } from "node:stream/web";
import { sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { ACME, AUTH_YAML, countOf, rows } from "../ingest/helpers.js";
import { useTestApp } from "../support/app.js";

/**
 * Genuine spans: a real `voice.AgentSession` of @livekit/agents in this process, with the package's own
 * fake STT and LLM (named as a Deepgram / OpenAI pair) and a TTS that returns silence, traced by a
 * tracer provider given to `telemetry.setTracerProvider` and exported by the real OTLP/HTTP protobuf
 * exporter configured by the two standard variables only.
 */

/** The package's fake STT, speaking as a streaming provider does: start of speech, the final transcript, end of speech. */
class ScriptedStream extends stt.SpeechStream {
  label = "deepgram.STT.stream";
  protected async run(): Promise<void> {
    const first = await this.input.next();
    if (first.done) return;
    await sleep(100);
    this.queue.put({ type: stt.SpeechEventType.START_OF_SPEECH });
    await sleep(1000);
    this.queue.put({
      type: stt.SpeechEventType.FINAL_TRANSCRIPT,
      alternatives: [{ text: QUESTION, language: "en" as never, startTime: 0, endTime: 1, confidence: 0.95 }],
    });
    this.queue.put({ type: stt.SpeechEventType.END_OF_SPEECH });
    for await (const _ of this.input) {
      // drain the audio until the session closes
    }
  }
}

class Ears extends stt.testing.FakeSTT {
  constructor() {
    super({ label: "deepgram.STT" });
  }
  override stream(): ReturnType<stt.testing.FakeSTT["stream"]> {
    return new ScriptedStream(this) as unknown as ReturnType<stt.testing.FakeSTT["stream"]>;
  }
}

const QUESTION = "what are your opening hours";
const QUESTION_ANSWER = "We are open from nine to five on weekdays.";
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

class Brain extends voice.testing.FakeLLM {
  override get model() {
    return "gpt-4o-mini";
  }
  override get provider() {
    return "openai";
  }
  /** FakeLLM streams no usage; a provider's last chunk carries it, so this one does too. */
  override chat(...args: Parameters<voice.testing.FakeLLM["chat"]>): ReturnType<voice.testing.FakeLLM["chat"]> {
    const stream = super.chat(...args);
    const inner = stream as unknown as { run(): Promise<void>; queue: { put(chunk: unknown): void } };
    const run = inner.run.bind(inner);
    inner.run = async () => {
      await run();
      inner.queue.put({ id: "fake", usage: { promptTokens: 1200, completionTokens: 80, promptCachedTokens: 1024, totalTokens: 1280 } });
    };
    return stream;
  }
}

const SAMPLE_RATE = 24_000;

class SilentStream extends tts.SynthesizeStream {
  label = "elevenlabs.TTS";
  protected async run(): Promise<void> {
    let text = "";
    for await (const data of this.input) {
      if (typeof data === "string") {
        this.markStarted();
        text += data;
        continue;
      }
      this.speak(text);
      text = "";
    }
    if (text) this.speak(text);
    if (!this.queue.closed) this.queue.put(tts.SynthesizeStream.END_OF_STREAM);
  }
  private speak(text: string) {
    // 10 ms of silence per character, in 100 ms frames.
    const frames = Math.max(1, Math.ceil(text.length / 10));
    for (let i = 0; i < frames; i++) {
      const samples = SAMPLE_RATE / 10;
      this.queue.put({ requestId: "r1", segmentId: "s1", frame: new AudioFrame(new Int16Array(samples), SAMPLE_RATE, 1, samples), final: i === frames - 1, deltaText: i === 0 ? text : "" });
    }
  }
}

class Voice extends tts.TTS {
  label = "elevenlabs.TTS";
  constructor() {
    super(SAMPLE_RATE, 1, { streaming: true });
  }
  override get model() {
    return "eleven_flash_v2_5";
  }
  override get provider() {
    return "elevenlabs";
  }
  synthesize(): tts.ChunkedStream {
    throw new Error("streaming only");
  }
  stream(): tts.SynthesizeStream {
    return new SilentStream(this);
  }
}

/** A speaker that plays instantly: playback starts on the first frame and finishes on flush. */
class Speaker extends voice.AudioOutput {
  private playing = 0;
  constructor() {
    super(SAMPLE_RATE);
  }
  override async captureFrame(frame: AudioFrame): Promise<void> {
    await super.captureFrame(frame);
    if (this.playing === 0) this.onPlaybackStarted(Date.now());
    this.playing += frame.samplesPerChannel / frame.sampleRate;
  }
  override flush(): void {
    super.flush();
    const position = this.playing;
    this.playing = 0;
    setTimeout(() => this.onPlaybackFinished({ playbackPosition: position, interrupted: false }), 50);
  }
  clearBuffer(): void {
    this.playing = 0;
  }
}

class Microphone extends voice.AudioInput {
  private controller!: ReadableStreamDefaultController<AudioFrame>;
  constructor() {
    super();
    this.multiStream.addInputStream(
      new ReadableStream<AudioFrame>({
        start: (c) => {
          this.controller = c as unknown as ReadableStreamDefaultController<AudioFrame>;
        },
      }) as never,
    );
  }
  push(ms: number) {
    const samples = Math.floor((16_000 * ms) / 1000);
    this.controller.enqueue(new AudioFrame(new Int16Array(samples), 16_000, 1, samples));
  }
}

describe("a real LiveKit AgentSession exporting its traces to Voxgate", () => {
  // The one STT model of Deepgram configured: the Node STT label ("deepgram.STT") resolves to it.
  const t = useTestApp({ yaml: `${AUTH_YAML}providers:\n  deepgram: {}\nmodels:\n  stt:\n    deepgram/nova-3: { provider: deepgram }\n`, listen: true });

  it("becomes a session with its turn (response speed), rated LLM/TTS/STT records, idempotent on re-send", async () => {
    initializeLogger({ pretty: false, level: "silent" });
    process.env.OTEL_EXPORTER_OTLP_ENDPOINT = `${t.base}/v1/otlp`;
    process.env.OTEL_EXPORTER_OTLP_HEADERS = `authorization=Bearer%20${ACME}`;
    const exporter = new OTLPTraceExporter();
    delete process.env.OTEL_EXPORTER_OTLP_ENDPOINT;
    delete process.env.OTEL_EXPORTER_OTLP_HEADERS;
    const fanout = new telemetry.FanoutSpanProcessor();
    const batch = new BatchSpanProcessor(exporter, { scheduledDelayMillis: 200, maxExportBatchSize: 512 });
    // A copy of what is sent, to send it again.
    const memory = new InMemorySpanExporter();
    const provider = new NodeTracerProvider({ spanProcessors: [batch, fanout, new SimpleSpanProcessor(memory)] });
    // Without register() (its context manager) llm_node, tts_* and agent_speaking would each start a trace of their own.
    provider.register();
    telemetry.setTracerProvider(provider, { registerSpanProcessor: (p) => fanout.add(p), metadata: {} });

    const session = new voice.AgentSession({
      stt: new Ears(),
      llm: new Brain([{ input: QUESTION, content: QUESTION_ANSWER, ttft: 0.05, duration: 0.2 }]),
      tts: new Voice(),
      turnHandling: { turnDetection: "stt", endpointing: { minDelay: 100, maxDelay: 300 } },
    });
    const mic = new Microphone();
    session.input.audio = mic;
    session.output.audio = new Speaker();
    await session.start({ agent: new voice.Agent({ instructions: "You answer questions about opening hours." }) });
    for (let i = 0; i < 25; i++) {
      mic.push(100);
      await new Promise((r) => setTimeout(r, 100));
    }
    await new Promise((r) => setTimeout(r, 1500));
    await session.close();
    await provider.forceFlush();
    const sent = memory.getFinishedSpans().slice();
    await provider.shutdown();

    const db = t.services.database.db;
    const traceId = sent[0]?.spanContext().traceId;
    expect(new Set(sent.map((sp) => sp.spanContext().traceId))).toEqual(new Set([traceId]));
    const records = await rows<Record<string, unknown>>(
      db,
      sql`SELECT modality, model_id, session_id, agent_id, tenant_id, input_tokens::int, output_tokens::int, cached_input_tokens::int,
            characters::int, audio_seconds, rated_price_usd, metadata FROM requests ORDER BY modality`,
    );
    // Outside a LiveKit job there is no conversation id or job id: the trace is the session.
    expect(records).toMatchObject([
      { modality: "llm", model_id: "openai/gpt-4o-mini", session_id: traceId, agent_id: "default_agent", tenant_id: "acme", input_tokens: 1200, output_tokens: 80, cached_input_tokens: 1024 },
      { modality: "stt", model_id: "deepgram/nova-3", session_id: traceId, metadata: { audio_seconds_estimated: true, stt_label: "deepgram.STT", stt_model_source: "only_configured_model" } },
      { modality: "tts", model_id: "elevenlabs/eleven_flash_v2_5", session_id: traceId, characters: QUESTION_ANSWER.length },
    ]);
    expect(Number(records[0]?.rated_price_usd)).toBeGreaterThan(0);
    expect(Number(records[1]?.audio_seconds)).toBeGreaterThan(0);
    expect(Number(records[1]?.rated_price_usd)).toBeGreaterThan(0);
    expect(Number(records[2]?.rated_price_usd)).toBeGreaterThan(0);

    const turns = await rows<{ turn_index: number; cs: number; ce: number; as: number; ae: number; response_speed_ms: number }>(
      db,
      sql`SELECT turn_index, caller_speak_start_ms::float8 AS cs, caller_speak_end_ms::float8 AS ce, agent_speak_start_ms::float8 AS as,
            agent_speak_end_ms::float8 AS ae, response_speed_ms FROM turns WHERE session_id = ${traceId}`,
    );
    expect(turns).toHaveLength(1);
    const turn = turns[0] as { turn_index: number; cs: number; ce: number; as: number; ae: number; response_speed_ms: number };
    expect(turn.turn_index).toBe(0);
    expect(turn.ce).toBeGreaterThan(turn.cs);
    expect(turn.ae).toBeGreaterThanOrEqual(turn.as);
    expect(turn.response_speed_ms).toBe(turn.as - turn.ce);

    // The exporter retries a batch it is not sure of: the same spans again store nothing.
    const before = { requests: await countOf(db, "requests"), turns: await countOf(db, "turns") };
    const again = new OTLPTraceExporter({ url: `${t.base}/v1/otlp/v1/traces`, headers: { authorization: `Bearer ${ACME}` } });
    await new Promise((resolve) => again.export(sent, resolve));
    await again.shutdown();
    expect({ requests: await countOf(db, "requests"), turns: await countOf(db, "turns") }).toEqual(before);
  });
});
