import { performance } from "node:perf_hooks";
import { WebSocket } from "ws";
import type { StreamMeter } from "../ws/relay.js";
import { type Leg, SwitchingUpstream } from "./switching-upstream.js";

/** A client frame read for the generation it belongs to (null from TtsWire.request: a frame of none). */
export interface TtsRequest {
  /** The generation (Cartesia's and ElevenLabs' context id, Deepgram's flush count); null with `cancel`: all of them. */
  context: string | null;
  cancel: boolean;
  /** The frame asks the vendor to answer now (a request, a flush): from here its silence counts toward a stall. */
  due: boolean;
  /** A frame every later leg is sent first, before any retried generation (ElevenLabs' connection opener). */
  setup?: boolean;
}

/**
 * One TTS WebSocket protocol across a failover seam (Cartesia's in src/gateway/protocols/cartesia.ts,
 * ElevenLabs' in elevenlabs.ts, Deepgram speak's in deepgram.ts): how a generation starts and ends,
 * what is its audio, what the vendor's failure and the client's in-band error look like. One
 * instance per stream (a protocol without context ids counts its generations).
 */
export interface TtsWire {
  /** A client frame as sent upstream. */
  request(frame: Buffer, isBinary: boolean): TtsRequest | null;
  /**
   * A vendor frame read for its generation: audio, the generation's end, or a failure the next
   * candidate may not share (a 5xx, a 429, a quota; not a request the vendor refused as invalid) —
   * context null when the vendor failed the whole stream. Null: none of these. `oldest` is the
   * generation the vendor answers first (for a protocol whose answers name none).
   */
  answer(frame: Buffer, isBinary: boolean, oldest: () => string | null): { context: string | null; kind: "audio" | "done" | "failed" } | null;
  /** A client frame sent on another leg: its model (and voice) named as that leg's vendor names them. */
  retarget(frame: Buffer, from: Leg, to: Leg): Buffer;
  /** The protocol's in-band error ending one generation while the stream stays open. */
  failure(context: string, message: string): string;
}

/** The stream's latest generation request as it was sent, and the provider it was sent to. */
export interface LatestRequest {
  frame: Buffer;
  provider: string;
}

/** The meter of a TTS leg: a generation retried elsewhere is unbilled there (it had no audio from this vendor). */
export interface TtsLegMeter extends StreamMeter {
  abandon(context: string, frames: readonly Buffer[]): void;
}

export interface TtsLegsOptions {
  first: Leg;
  wire: TtsWire;
  /** No vendor frame for this long while a generation waits for its answer fails the leg (gateway.streams.stall_ms). */
  stallMs: number;
  /** Opens the next candidate after `failed` (its attempt status fallback), or null when none is left. */
  next(failed: Leg, reason: string): Promise<Leg | null>;
}

interface InFlight {
  /** The client frames of the generation as sent upstream (what the next leg is sent again). */
  frames: Buffer[];
  audio: boolean;
  /** When the vendor was asked to answer it (performance.now()), null while it is not due. */
  dueAt: number | null;
}

/** A failure the vendor sent in-band: its frame, the generation it names, whether the client already has it. */
interface InBandFailure {
  context: string | null;
  frame: Buffer;
  passed: boolean;
}

const AS_TEXT = { binary: false } as const;

/**
 * The vendor side of a TTS WebSocket stream (Cartesia, ElevenLabs, Deepgram speak) that survives its
 * vendor failing: relay() sees one upstream socket, legs switch underneath. A leg fails when its
 * vendor sends a server-side error, its socket drops or closes abnormally, or it sends nothing for
 * `stallMs` while a generation waits for its answer. Then the next candidate is opened and becomes
 * the stream's vendor: it is sent the stream's setup frames, each generation in flight that had no
 * audio yet is sent to it again (the client never learns), each that had audio fails in-band in the
 * protocol's shape, and the stream stays open. With no candidate left the client sees what it would
 * have without failover.
 *
 * Before any failure the per-frame work is the wire's short scan of each frame, keeping the client's
 * frames of the generations still in flight (by reference), and one timer per stream.
 */
export class TtsLegs extends SwitchingUpstream {
  private readonly inFlight = new Map<string, InFlight>();
  /** Frames every later leg gets first (by reference: a generation's copy of one is not sent twice). */
  private readonly setup: Buffer[] = [];
  /** Client frames that arrived while the next leg was opening. */
  private held: Array<{ frame: Buffer; isBinary: boolean }> = [];
  /** The failing vendor's error frames for other generations while the next leg opens. */
  private lateFailures: Buffer[] = [];
  private lastAnswer = false;
  private latest: LatestRequest | null = null;
  private lastVendorAt = performance.now();
  /** No candidate was left at a seam: a stall no longer fails the leg (nothing could replace it). */
  private exhausted = false;
  private readonly stallTimer: NodeJS.Timeout;
  private readonly oldest = () => this.oldestContext();

  constructor(private readonly opts: TtsLegsOptions) {
    super(opts.first);
    this.attach(opts.first);
    this.stallTimer = setInterval(() => this.checkStall(), Math.max(10, Math.floor(opts.stallMs / 4)));
    this.stallTimer.unref();
  }

  readonly meter: StreamMeter = {
    client: (frame, isBinary) => (this.state === "live" ? this.leg.meter.client(frame, isBinary) : false),
    upstream: () => this.lastAnswer,
    units: () => this.leg.meter.units(),
    error: () => this.leg.meter.error?.() ?? null,
    lines: () => this.leg.meter.lines?.() ?? [],
  };

  /** The route's model gate bills or unbills the frame just metered: on the current leg's ledger. */
  readonly gateMeter = {
    ...this.meter,
    // The gate resolves the stream's model to the first leg's target: on a later leg that is the leg's own.
    assignLast: (t: unknown) => (this.leg.meter as unknown as { assignLast?(t: unknown): void }).assignLast?.(t === this.opts.first.target ? this.leg.target : t),
    unbillLast: () => (this.leg.meter as unknown as { unbillLast?(): void }).unbillLast?.(),
  };

  /** The stream's latest generation request (a cross-vendor candidate takes its voice and format from it). */
  latestRequest(): LatestRequest | null {
    return this.latest;
  }

  send(data: Buffer | string, opts: { binary: boolean }): void {
    const frame = typeof data === "string" ? Buffer.from(data) : data;
    // While the next leg opens, frames wait (unmetered: relay() read them as no work) and go to it after the retries.
    if (this.state === "switching") this.held.push({ frame, isBinary: opts.binary });
    else if (this.state === "live") this.toLeg(this.leg, frame, opts.binary);
  }

  protected override stopped(): void {
    clearInterval(this.stallTimer);
  }

  private toLeg(leg: Leg, data: Buffer, isBinary: boolean): void {
    const frame = !isBinary && leg !== this.opts.first ? this.opts.wire.retarget(data, this.opts.first, leg) : data;
    const r = this.opts.wire.request(frame, isBinary);
    if (r?.setup) this.setup.push(frame);
    if (r?.cancel) {
      if (r.context === null) this.inFlight.clear();
      else this.inFlight.delete(r.context);
    } else if (r && r.context !== null) {
      this.latest = { frame, provider: leg.target.providerId };
      const g = this.inFlight.get(r.context) ?? { frames: [], audio: false, dueAt: null };
      if (g.frames.length === 0) this.inFlight.set(r.context, g);
      g.frames.push(frame);
      if (r.due && g.dueAt === null) g.dueAt = performance.now();
    }
    leg.socket.send(frame, isBinary ? { binary: true } : AS_TEXT);
  }

  /** The generation the vendor answers first: the oldest one it was asked to answer, else the newest open one. */
  private oldestContext(): string | null {
    let last: string | null = null;
    for (const [context, g] of this.inFlight) {
      if (g.dueAt !== null) return context;
      last = context;
    }
    return last;
  }

  /**
   * A generation waits for its first audio and the vendor has sent nothing for stallMs: the leg
   * failed. (Silence after a generation's audio began is pacing, not a stall: ElevenLabs answers a
   * flush with audio and no end marker.)
   */
  private checkStall(): void {
    if (this.state !== "live" || this.exhausted) return;
    const now = performance.now();
    for (const g of this.inFlight.values()) {
      if (g.dueAt !== null && !g.audio && now - Math.max(g.dueAt, this.lastVendorAt) >= this.opts.stallMs) {
        void this.fail(this.leg, `the vendor sent nothing for ${this.opts.stallMs} ms while a generation waited`, null);
        return;
      }
    }
  }

  protected legClosed(leg: Leg, code: number, reason: Buffer, lost: string | null): void {
    if (lost) void this.fail(leg, lost, null);
    else this.end(code, reason);
  }

  protected fromVendor(leg: Leg, frame: Buffer, isBinary: boolean): void {
    // While the next leg opens after an in-band failure, the failing vendor's other generations still flow.
    if (leg !== this.leg || this.state === "closed") return;
    this.lastVendorAt = performance.now();
    const a = this.opts.wire.answer(frame, isBinary, this.oldest);
    if (a?.kind === "failed" && this.state === "switching") {
      // Already failing over: kept for the case no candidate opens (then the client gets it as it came).
      this.lateFailures.push(frame);
      return;
    }
    if (a?.kind === "failed") {
      // A failure before the generation's first audio is held back: it is retried on the next leg. So
      // is one of the whole stream: each generation in flight is retried or failed in-band at the seam.
      const g = a.context === null ? null : this.inFlight.get(a.context);
      const retried = a.context === null || (g !== undefined && g !== null && !g.audio);
      if (!retried) this.lastAnswer = leg.meter.upstream(frame, isBinary);
      void this.fail(leg, this.vendorWords(frame), { context: a.context, frame, passed: !retried });
      return;
    }
    this.lastAnswer = leg.meter.upstream(frame, isBinary);
    if (a !== null && a.context !== null) {
      if (a.kind === "done") this.inFlight.delete(a.context);
      else {
        const g = this.inFlight.get(a.context);
        if (g) g.audio = true;
      }
    }
    this.emit("message", frame, isBinary);
  }

  private vendorWords(frame: Buffer): string {
    try {
      const m = JSON.parse(frame.toString("utf8")) as Record<string, unknown>;
      // Deepgram's `message` is a code and its `description` the words; the others have no description.
      for (const k of ["description", "message", "error", "title"]) if (typeof m[k] === "string" && m[k] !== "") return (m[k] as string).slice(0, 500);
    } catch {
      // not JSON: the generic reason below
    }
    return "the vendor failed a generation";
  }

  /**
   * The current leg failed (`inBand`: the vendor's error frame, `passed` when the client got it as it
   * came). Opens the next candidate; with none, the stream goes on (in-band, the vendor's socket still
   * open) or ends 1011 (socket) as it would without failover.
   */
  private async fail(leg: Leg, reason: string, inBand: InBandFailure | null): Promise<void> {
    if (leg !== this.leg || this.state !== "live") return;
    this.state = "switching";
    if (inBand?.passed) this.emit("message", inBand.frame, false);
    const next = await this.openNext(() => this.opts.next(leg, reason));
    // The client may have left while the next leg was opening (state changes across the await).
    if ((this.state as TtsLegs["state"]) === "closed") return;
    if (!next) return this.noCandidate(leg, reason, inBand);
    this.lateFailures = [];
    this.retire(leg, reason);
    // Generations retried elsewhere bill nothing on the failed leg (they had no audio from it).
    for (const [context, g] of this.inFlight) if (!g.audio) (leg.meter as Partial<TtsLegMeter>).abandon?.(context, g.frames);
    leg.release();
    this.leg = next;
    this.lastVendorAt = performance.now();
    this.observer?.switched(leg, next);
    this.attach(next);
    const setup = this.setup.map((f) => this.opts.wire.retarget(f, leg, next));
    for (const f of setup) this.resend(next, f);
    const now = performance.now();
    for (const [context, g] of this.inFlight) {
      if (g.audio) {
        // Its audio came from the failed vendor: it cannot be continued elsewhere, it fails in-band.
        this.inFlight.delete(context);
        if (context !== inBand?.context || !inBand.passed) this.emit("message", Buffer.from(this.opts.wire.failure(context, `the vendor failed mid-generation: ${reason}`)), false);
        continue;
      }
      g.frames = g.frames.filter((f) => !this.setup.includes(f)).map((f) => this.opts.wire.retarget(f, leg, next));
      if (g.dueAt !== null) g.dueAt = now;
      for (const f of g.frames) this.resend(next, f);
    }
    this.setup.splice(0, this.setup.length, ...setup);
    this.state = "live";
    this.flushHeld(next);
  }

  /** No candidate is left: the client gets what the vendor sent, and the stream goes on while its socket does. */
  private noCandidate(leg: Leg, reason: string, inBand: InBandFailure | null): void {
    this.exhausted = true;
    if (inBand && !inBand.passed) {
      leg.meter.upstream(inBand.frame, false);
      this.emit("message", inBand.frame, false);
    }
    if (inBand) {
      for (const f of this.lateFailures) {
        leg.meter.upstream(f, false);
        this.emit("message", f, false);
      }
    }
    this.lateFailures = [];
    // The vendor's socket still serves (an in-band failure, a stall): the stream goes on with it.
    if (leg.socket.readyState === WebSocket.OPEN) {
      if (inBand && inBand.context !== null) this.inFlight.delete(inBand.context);
      this.state = "live";
      this.flushHeld(leg);
      return;
    }
    this.state = "closed";
    this.stopped();
    this.emit("error", new Error(reason));
    this.emit("close", 1006, Buffer.from(reason.slice(0, 120)));
  }

  private resend(leg: Leg, frame: Buffer): void {
    leg.meter.client(frame, false);
    leg.socket.send(frame, AS_TEXT);
  }

  private flushHeld(leg: Leg): void {
    const held = this.held;
    this.held = [];
    for (const h of held) {
      leg.meter.client(h.frame, h.isBinary);
      this.toLeg(leg, h.frame, h.isBinary);
    }
  }
}
