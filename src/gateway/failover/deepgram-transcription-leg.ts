import { randomUUID } from "node:crypto";
import { deepgramListenMeter } from "../audio/stream-meters.js";
import { jsonObject } from "../audio/stt-units.js";
import type { VendorProtocol } from "../protocol.js";
import { realtimeEventType } from "../protocols/openai-realtime.js";
import type { StreamMeter } from "../ws/relay.js";
import type { LegBridge } from "./switching-upstream.js";
import { DeepgramToOpenAi } from "./transcripts.js";
import { TranslatingLeg } from "./translating-leg.js";

/** The OpenAI session's audio as Deepgram is told it: pcm16 mono at 24 kHz is linear16 at 24000. */
const FORMAT = { encoding: "linear16", sampleRate: 24_000, channels: 1, multichannel: false } as const;
const TRANSCRIPT = "input_audio_transcription";

/**
 * An OpenAI realtime transcription stream (pcm16 at 24 kHz, see src/gateway/failover/openai-live.ts)
 * failed over to a Deepgram live `listen` model: the audio needs no resampling, only its base64
 * decoded. `deepgram`: Deepgram's protocol (its upstream auth), passed in so that the OpenAI
 * protocol's modules need not import Deepgram's.
 */
export function openAiToDeepgramBridge(deepgram: VendorProtocol): LegBridge {
  return {
    providerTypes: ["deepgram"],
    protocol: deepgram,
    upstream: (target) => ({
      path: `/listen?${new URLSearchParams({ model: target.modelName, encoding: FORMAT.encoding, sample_rate: String(FORMAT.sampleRate), channels: "1", interim_results: "false" })}`,
      headers: {},
    }),
    leg(socket) {
      const leg = new DeepgramTranscriptionLeg(socket);
      return { socket: leg, meter: leg.meter };
    },
  };
}

/**
 * A Deepgram live session that speaks OpenAI's realtime transcription protocol to the leg switch:
 * `input_audio_buffer.append` becomes a binary audio frame, `input_audio_buffer.commit` a `Finalize`;
 * each final `Results` comes back as one OpenAI item (speech events, a delta, the completion) on the
 * leg's own timeline, and Deepgram's `Error` as OpenAI's `error` event, so the switch fails the leg
 * as it would an OpenAI vendor's. Session updates have no counterpart (Deepgram's parameters are on
 * its URL); a client closing its socket closes the leg.
 */
class DeepgramTranscriptionLeg extends TranslatingLeg {
  /** Deepgram answers every few hundred ms, speech or not: its silence is a stall. */
  override readonly quiet = false;
  private readonly billed = deepgramListenMeter(FORMAT);
  private readonly toOpenAi = new DeepgramToOpenAi(`item_vg${randomUUID().replaceAll("-", "").slice(0, 12)}`);

  /** The leg's meter as the switch reads it: OpenAI events out, the Deepgram vendor's bill as units. */
  readonly meter: StreamMeter = {
    client: (frame, isBinary) => !isBinary && frame.includes("input_audio_buffer.append"),
    upstream: (frame, isBinary) => !isBinary && frame.includes(TRANSCRIPT),
    units: () => this.billed.units(),
    error: () => this.billed.error?.() ?? null,
  };

  /** A client frame of OpenAI's protocol. */
  send(data: Buffer | string, opts: { binary: boolean }): void {
    if (opts.binary || this.ws.readyState !== this.ws.OPEN) return;
    const frame = typeof data === "string" ? Buffer.from(data) : data;
    const type = realtimeEventType(frame);
    if (type === "input_audio_buffer.append") {
      const audio = jsonObject(frame.toString("utf8"))?.audio;
      if (typeof audio !== "string") return;
      const pcm = Buffer.from(audio, "base64");
      this.billed.client(pcm, true);
      this.ws.send(pcm, { binary: true });
    } else if (type === "input_audio_buffer.commit") this.ws.send(JSON.stringify({ type: "Finalize" }));
  }

  protected fromVendor(frame: Buffer): void {
    this.billed.upstream(frame, false);
    const msg = jsonObject(frame.toString("utf8"));
    if (msg?.type === "Error") {
      const message = this.billed.error?.() ?? "the vendor reported an error";
      this.toClient({ type: "error", event_id: `event_vg${randomUUID().replaceAll("-", "").slice(0, 12)}`, error: { type: "server_error", code: "upstream_error", message, param: null } });
      return;
    }
    for (const event of this.toOpenAi.translate(msg)) this.toClient(event);
  }
}
