import type { WebSocket } from "ws";
import { realtimeTranscriptionMeter } from "../audio/stream-meters.js";
import { deepgramAudioFormat, isRecord, jsonObject } from "../audio/stt-units.js";
import type { UpstreamTarget } from "../protocol.js";
import { openaiProtocol } from "../protocols/openai.js";
import type { StreamMeter } from "../ws/relay.js";
import { PcmResampler } from "./resample.js";
import type { LegBridge } from "./switching-upstream.js";
import { OpenAiToDeepgram } from "./transcripts.js";
import { TranslatingLeg } from "./translating-leg.js";

/** OpenAI realtime transcription's input: pcm16 mono at 24 kHz. */
const OPENAI_RATE = 24_000;
const OPENAI_BYTES_PER_SECOND = OPENAI_RATE * 2;
/** The least audio OpenAI commits (100 ms); a commit of less is answered `input_audio_buffer_commit_empty`. */
const MIN_COMMIT_BYTES = OPENAI_BYTES_PER_SECOND / 10;
const RESULTS = Buffer.from('"Results"');

/**
 * A Deepgram live `listen` stream failed over to an OpenAI realtime transcription model, or null when
 * the stream's audio does not translate: only one channel of `linear16` (any integer sample rate),
 * resampled to OpenAI's pcm16 at 24 kHz. Other encodings (mulaw, alaw, containers) and several
 * channels are skipped as candidates of this kind.
 */
export function deepgramToOpenAiBridge(query: URLSearchParams): LegBridge | null {
  const f = deepgramAudioFormat(query);
  if (f.encoding?.toLowerCase() !== "linear16" || f.sampleRate === null || f.channels !== 1 || f.multichannel) return null;
  const sampleRate = f.sampleRate;
  // OpenAI takes ISO-639-1 codes ("en" of Deepgram's "en-US"); Deepgram's "multi" means: detect it.
  const language = query.get("language")?.split("-")[0]?.toLowerCase() ?? null;
  const interim = query.get("interim_results") === "true";
  return {
    providerTypes: ["openai"],
    protocol: openaiProtocol,
    upstream: () => ({ path: "/realtime?intent=transcription", headers: {} }),
    leg(socket, target, requestId) {
      const leg = new OpenAiTranscriptionLeg(socket, { target, requestId, sampleRate, language: language === "multi" ? null : language, interim });
      return { socket: leg, meter: leg.meter };
    },
  };
}

interface LegOptions {
  target: UpstreamTarget;
  requestId: string;
  /** The client's sample rate (its linear16 is resampled from it). */
  sampleRate: number;
  language: string | null;
  /** The client asked for interim results (Deepgram `interim_results=true`). */
  interim: boolean;
}

/**
 * An OpenAI realtime transcription session that speaks Deepgram's live protocol to the leg switch
 * (src/gateway/failover/legs.ts): client audio frames are resampled and sent as
 * `input_audio_buffer.append`, `Finalize` and `CloseStream` commit what is left, and the vendor's
 * transcription events come back as Deepgram `Results` on the leg's own timeline (the switch moves
 * them onto the client's). After `CloseStream`, once every committed item is transcribed, the client
 * gets Deepgram's `Metadata` and a normal close. The vendor's `error` becomes Deepgram's `Error`
 * frame, so the switch fails the leg as it would a Deepgram vendor's. OpenAI is silent while nobody
 * speaks (Deepgram answers every few hundred ms): the leg is `quiet`, so the switch's stall clock
 * pings it and counts its pongs; a vendor whose socket stops answering still fails the leg.
 */
class OpenAiTranscriptionLeg extends TranslatingLeg {
  /** OpenAI sends nothing while nobody speaks: the switch's stall clock pings it. */
  override readonly quiet = true;
  /** What the vendor billed (its `usage`, else the audio it was sent), read by the leg's meter. */
  private readonly billed = realtimeTranscriptionMeter();
  private readonly resampler: PcmResampler;
  private readonly toDeepgram: OpenAiToDeepgram;
  /** Bytes of 24 kHz pcm16 sent, and up to where a commit (the vendor's VAD or ours) has taken them. */
  private sent = 0;
  private committedUpTo = 0;
  /** Items whose speech the vendor's VAD saw stop (their commit is the VAD's, not ours). */
  private readonly vadItems = new Set<string>();
  /** Committed items still waiting for their transcript. */
  private readonly pending = new Set<string>();
  /** Items our own commit made (the client's Finalize or CloseStream): answered with their final only. */
  private readonly finalizing = new Set<string>();
  private awaitingCommit = false;
  private closing = false;
  private finished = false;

  constructor(
    ws: WebSocket,
    private readonly opts: LegOptions,
  ) {
    super(ws);
    this.resampler = new PcmResampler(opts.sampleRate, OPENAI_RATE);
    this.toDeepgram = new OpenAiToDeepgram(0, opts.requestId, opts.target.modelName);
    const transcription = { model: opts.target.modelName, ...(opts.language && { language: opts.language }) };
    this.toVendor({
      type: "session.update",
      session: { type: "transcription", audio: { input: { format: { type: "audio/pcm", rate: OPENAI_RATE }, transcription, turn_detection: { type: "server_vad" } } } },
    }, this.billed);
  }

  /** The leg's meter as the switch reads it: Deepgram frames out, the OpenAI vendor's bill as units. */
  readonly meter: StreamMeter = {
    // Audio is metered as it is appended (resampled), so what the vendor was sent is what counts.
    client: (_frame, isBinary) => isBinary,
    upstream: (frame, isBinary) => !isBinary && frame.includes(RESULTS),
    units: () => this.billed.units(),
    error: () => this.billed.error?.() ?? null,
  };

  /** A client frame of Deepgram's protocol. */
  send(data: Buffer | string, opts: { binary: boolean }): void {
    if (opts.binary) {
      this.append(this.resampler.push(typeof data === "string" ? Buffer.from(data) : data));
      return;
    }
    const text = typeof data === "string" ? data : data.toString("utf8");
    if (text.includes("CloseStream")) {
      if (this.closing) return;
      this.closing = true;
      this.append(this.resampler.flush());
      this.commit();
      this.finishIfDone();
    } else if (text.includes("Finalize")) this.commit();
    // KeepAlive has no counterpart: an OpenAI session stays open without it.
  }

  private append(pcm: Buffer): void {
    if (pcm.length === 0) return;
    this.sent += pcm.length;
    this.toVendor({ type: "input_audio_buffer.append", audio: pcm.toString("base64") }, this.billed);
  }

  private commit(): void {
    if (this.sent - this.committedUpTo < MIN_COMMIT_BYTES) return;
    this.committedUpTo = this.sent;
    this.awaitingCommit = true;
    this.toVendor({ type: "input_audio_buffer.commit" }, this.billed);
  }

  protected fromVendor(frame: Buffer): void {
    const event = jsonObject(frame.toString("utf8"));
    if (event === null) return;
    const id = typeof event.item_id === "string" ? event.item_id : "";
    switch (event.type) {
      case "error": {
        const err = isRecord(event.error) ? event.error : {};
        // Our commit of a buffer the vendor's VAD had just taken: nothing was lost, nothing failed.
        if (err.code === "input_audio_buffer_commit_empty") {
          this.awaitingCommit = false;
          this.finishIfDone();
          return;
        }
        this.billed.upstream(frame, false);
        const message = typeof err.message === "string" ? err.message : "the vendor reported an error";
        this.toClient({ type: "Error", description: message, message: typeof err.code === "string" ? err.code : "upstream_error", variant: "openai" });
        return;
      }
      case "input_audio_buffer.speech_stopped": {
        // The VAD commits the item whose speech stopped (one still in speech is committed by ours).
        this.vadItems.add(id);
        const end = typeof event.audio_end_ms === "number" ? Math.round((event.audio_end_ms * OPENAI_BYTES_PER_SECOND) / 1000) : this.sent;
        this.committedUpTo = Math.max(this.committedUpTo, Math.min(end, this.sent));
        break;
      }
      case "input_audio_buffer.committed":
        this.pending.add(id);
        if (!this.vadItems.delete(id)) {
          this.awaitingCommit = false;
          this.finalizing.add(id);
        }
        break;
    }
    this.billed.upstream(frame, false);
    // Deepgram answers a Finalize with finals only: a client may stop listening at the first answer after it.
    const finalOnly = !this.opts.interim || this.finalizing.has(id);
    for (const msg of this.toDeepgram.translate(event, this.sent / OPENAI_BYTES_PER_SECOND)) {
      if (!finalOnly || msg.is_final === true) this.toClient(msg);
    }
    if (event.type === "conversation.item.input_audio_transcription.completed" || event.type === "conversation.item.input_audio_transcription.failed") {
      this.pending.delete(id);
      this.finalizing.delete(id);
    }
    this.finishIfDone();
  }

  /** After CloseStream, once nothing is left to transcribe: Deepgram's closing Metadata, then a normal close. */
  private finishIfDone(): void {
    if (!this.closing || this.finished || this.awaitingCommit || this.pending.size > 0) return;
    this.finished = true;
    const duration = this.sent / OPENAI_BYTES_PER_SECOND;
    this.toClient({ type: "Metadata", transaction_key: "deprecated", request_id: this.opts.requestId, sha256: "", created: new Date().toISOString(), duration, channels: 1 });
    this.ws.close(1000);
  }
}
