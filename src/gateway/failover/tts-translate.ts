import type { WebSocket } from "ws";
import { TtsContextLedger } from "../audio/tts-contexts.js";
import { isRecord, jsonObject } from "../audio/stt-units.js";
import type { GatewayErrorCode, UpstreamTarget } from "../protocol.js";
import { ELEVENLABS_CLIENT_ERRORS, elevenlabsProtocol } from "../protocols/elevenlabs.js";
import type { LatestRequest, TtsLegMeter } from "./tts-legs.js";
import type { LegBridge } from "./switching-upstream.js";
import { TranslatingLeg } from "./translating-leg.js";
import type { VoiceMap } from "./voices.js";

/** The raw PCM rates ElevenLabs offers as output_format `pcm_<rate>` (16-bit little-endian, mono). */
const ELEVENLABS_PCM_RATES = new Set([16_000, 22_050, 24_000, 44_100]);
/** A voice id goes into the ElevenLabs path: a plain identifier only (as its own route requires). */
const PATH_SAFE = /^[A-Za-z0-9_-]{1,100}$/;
const TRANSCRIPT = Buffer.from('"transcript"');

/** What a Cartesia generation asks for, as the ElevenLabs connection must be opened for it. */
interface Speech {
  voice: string;
  rate: number;
}

/** A Cartesia generation request's raw pcm_s16le sample rate, or null when its output does not translate. */
function pcmRate(msg: Record<string, unknown>): number | null {
  const f = msg.output_format;
  if (!isRecord(f) || f.container !== "raw" || f.encoding !== "pcm_s16le") return null;
  return typeof f.sample_rate === "number" && ELEVENLABS_PCM_RATES.has(f.sample_rate) ? f.sample_rate : null;
}

/** A Cartesia generation request's voice id (`voice: {mode: "id", id}`). */
function voiceOf(msg: Record<string, unknown>): string | null {
  return isRecord(msg.voice) && typeof msg.voice.id === "string" ? msg.voice.id : null;
}

/**
 * A Cartesia tts/websocket stream failed over to an ElevenLabs candidate, where the stream's latest
 * generation request (read at the seam) translates: its voice mapped by `voices:` to one of that
 * ElevenLabs provider's, and its output raw pcm_s16le at a rate ElevenLabs offers. Otherwise the
 * candidate is skipped. The other direction and other pairs are not translated.
 */
/** Cartesia's in-band error message; passed in by the Cartesia protocol, which owns its shape. */
export type CartesiaError = (frame: string | null, code: GatewayErrorCode, message: string) => string;

export function cartesiaToElevenLabsBridge(voices: VoiceMap, latest: () => LatestRequest | null, clientError: CartesiaError): LegBridge {
  const chosen = new WeakMap<UpstreamTarget, Speech>();
  return {
    providerTypes: ["elevenlabs"],
    protocol: elevenlabsProtocol,
    upstream(target) {
      const req = latest();
      const msg = req ? jsonObject(req.frame.toString("utf8")) : null;
      const voice = msg && voiceOf(msg);
      const mapped = req && voice ? voices.mapped(voice, req.provider, target.providerId) : null;
      const rate = msg && pcmRate(msg);
      if (!mapped || !PATH_SAFE.test(mapped) || !rate) return null;
      chosen.set(target, { voice: mapped, rate });
      const query = new URLSearchParams({ model_id: target.modelName, output_format: `pcm_${rate}` });
      return { path: `/text-to-speech/${mapped}/multi-stream-input?${query}`, headers: {} };
    },
    leg(socket, target) {
      const speech = chosen.get(target);
      if (!speech) throw new Error("ElevenLabs leg opened without its upstream()");
      const leg = new CartesiaOverElevenLabs(socket, target, speech, clientError);
      return { socket: leg, meter: leg.meter };
    },
  };
}

/**
 * An ElevenLabs multi-stream-input connection that speaks Cartesia's tts/websocket to the leg switch
 * (src/gateway/failover/tts-legs.ts). A Cartesia generation (context_id) is an ElevenLabs context of
 * the same id: its transcript goes as `text`, its last piece (`continue` not true) with `flush` and
 * `close_context`, a `cancel` as `close_context`. ElevenLabs `audio` comes back as Cartesia `chunk`s
 * and the context's `isFinal` as `done`. ElevenLabs' error message (the whole connection's) becomes
 * Cartesia's `error` without a context: a server-side one (status 500) fails the leg as a Cartesia
 * vendor's would. A generation asking for another voice or format than the connection's fails
 * in-band (400): ElevenLabs fixes both per connection. Characters are metered as sent to ElevenLabs.
 */
class CartesiaOverElevenLabs extends TranslatingLeg {
  private readonly billed: TtsContextLedger;
  /** Contexts sent to the vendor and not yet done; true once their close_context went. */
  private readonly open = new Map<string, boolean>();
  private answered = false;

  constructor(
    ws: WebSocket,
    target: UpstreamTarget,
    private readonly speech: Speech,
    private readonly clientError: CartesiaError,
  ) {
    super(ws);
    this.billed = new TtsContextLedger("elevenlabs", target);
  }

  /** The leg's meter as the switch reads it: Cartesia frames in and out, billed as ElevenLabs was sent and answered. */
  readonly meter: TtsLegMeter = {
    client: (frame, isBinary) => !isBinary && frame.includes(TRANSCRIPT),
    upstream: () => {
      const first = this.answered;
      this.answered = false;
      return first;
    },
    units: () => this.billed.units(),
    error: () => this.billed.error(),
    lines: () => this.billed.lines(),
    abandon: (context) => this.billed.abandon(context),
  };

  /** A client frame of Cartesia's protocol (the voice already as `voices:` names it for this provider). */
  send(data: Buffer | string, opts: { binary: boolean }): void {
    if (opts.binary) return;
    const msg = jsonObject(typeof data === "string" ? data : data.toString("utf8"));
    if (!msg || typeof msg.context_id !== "string") return;
    const context = msg.context_id;
    if (msg.cancel === true) {
      if (this.open.delete(context)) this.toVendor({ context_id: context, close_context: true }, this.billed);
      return;
    }
    if (typeof msg.transcript !== "string") return;
    const voice = voiceOf(msg);
    if ((voice !== null && voice !== this.speech.voice) || (msg.output_format !== undefined && pcmRate(msg) !== this.speech.rate)) {
      this.toClient(this.clientError(JSON.stringify({ context_id: context }), "invalid_request", `this stream's ElevenLabs fallback speaks voice ${this.speech.voice} as pcm_s16le at ${this.speech.rate} Hz only`));
      return;
    }
    // A new ElevenLabs context starts with a single space (it synthesizes nothing).
    if (!this.open.has(context)) this.toVendor({ text: " ", context_id: context }, this.billed);
    this.open.set(context, false);
    const last = msg.continue !== true;
    if (msg.transcript !== "") this.toVendor({ text: msg.transcript, context_id: context, ...((last || msg.flush === true) && { flush: true }) }, this.billed);
    else if (last || msg.flush === true) this.toVendor({ context_id: context, flush: true }, this.billed);
    if (last) {
      this.open.set(context, true);
      this.toVendor({ context_id: context, close_context: true }, this.billed);
    }
  }

  protected fromVendor(frame: Buffer): void {
    if (this.billed.upstream(frame, false)) this.answered = true;
    const msg = jsonObject(frame.toString("utf8"));
    if (!msg) return;
    const context = typeof msg.contextId === "string" ? msg.contextId : "";
    if (typeof msg.audio === "string" && msg.audio !== "" && this.open.has(context)) {
      this.toClient({ type: "chunk", context_id: context, data: msg.audio, done: false, status_code: 206, step_time: 0 });
    }
    // A flush alone may be answered isFinal too: the generation ends once its close_context went.
    if (msg.isFinal === true && this.open.get(context) === true) {
      this.open.delete(context);
      this.toClient({ type: "done", context_id: context, done: true, status_code: 200 });
    }
    if (typeof msg.error === "string") {
      // ElevenLabs' error is the connection's: one refusing the input (1008) is the client's, any other the vendor's.
      const refused = ELEVENLABS_CLIENT_ERRORS.has(msg.error);
      const words = typeof msg.message === "string" ? msg.message : msg.error;
      this.toClient({ type: "error", done: true, status_code: refused ? 400 : 500, title: msg.error, message: words, error: words });
    }
  }
}
