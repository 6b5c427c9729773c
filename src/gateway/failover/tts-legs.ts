import { WebSocket } from "ws";
import type { StreamMeter } from "../ws/relay.js";
import { type Leg, SwitchingUpstream } from "./switching-upstream.js";

/** How a context-based TTS protocol's frames read across a seam (Cartesia's: src/gateway/protocols/cartesia.ts). */
export interface TtsWire {
  /** The generation a client frame belongs to, and whether it cancels it; null for a frame of none. */
  request(frame: Buffer): { context: string; cancel: boolean } | null;
  /**
   * A vendor frame read for its generation: audio, the generation's end, or a failure the next
   * candidate may not share (a 5xx or 429, not a request the vendor refused as invalid). Null: none of these.
   */
  answer(frame: Buffer): { context: string | null; kind: "audio" | "done" | "failed" } | null;
  /** A client frame sent on another leg: its model named as that leg's vendor names it. */
  retarget(frame: Buffer, from: Leg, to: Leg): Buffer;
  /** The protocol's in-band error ending one generation (its context) while the stream stays open. */
  failure(context: string, message: string): string;
}

/** The meter of a TTS leg: its ledger can drop a generation that is retried elsewhere (0 characters here). */
export interface TtsLegMeter extends StreamMeter {
  abandon(context: string): void;
}

export interface TtsLegsOptions {
  first: Leg;
  wire: TtsWire;
  /** Opens the next candidate after `failed` (its attempt status fallback), or null when none is left. */
  next(failed: Leg, reason: string): Promise<Leg | null>;
}

interface InFlight {
  /** The client frames of the generation as sent upstream (what the next leg is sent again). */
  frames: Buffer[];
  audio: boolean;
}

const AS_TEXT = { binary: false } as const;
const noop = () => {};

/**
 * The vendor side of a context-based TTS stream (Cartesia's tts/websocket) that survives its vendor
 * failing: relay() sees one upstream socket, legs switch underneath. A leg fails when its vendor
 * answers a generation with a server-side error, or its socket drops or closes abnormally. Then the
 * next candidate is opened and becomes the stream's vendor: each generation in flight that had no
 * audio yet is sent to it again (the client never learns), each that had audio fails in-band in the
 * protocol's shape (the vendor's own error frame for the one it failed), and the stream stays open.
 * With no candidate left the client sees what it would have without failover.
 *
 * Before any failure the per-frame work is a short scan of each frame for its type and context and
 * keeping the client's frames of the generations still in flight (by reference).
 */
export class TtsLegs extends SwitchingUpstream {
  private readonly inFlight = new Map<string, InFlight>();
  /** Client frames that arrived while the next leg was opening. */
  private held: Buffer[] = [];
  /** The failing vendor's error frames for other generations while the next leg opens. */
  private lateFailures: Buffer[] = [];
  private lastAnswer = false;
  constructor(private readonly opts: TtsLegsOptions) {
    super(opts.first);
    this.attach(opts.first);
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

  send(data: Buffer | string, opts: { binary: boolean }): void {
    const frame = typeof data === "string" ? Buffer.from(data) : data;
    // While the next leg opens, frames wait (unmetered: relay() read them as no work) and go to it after the retries.
    if (this.state === "switching") this.held.push(frame);
    else if (this.state === "live") this.toLeg(this.leg, frame, opts.binary);
  }

  private toLeg(leg: Leg, data: Buffer, isBinary: boolean): void {
    let frame = data;
    if (!isBinary) {
      if (leg !== this.opts.first) frame = this.opts.wire.retarget(frame, this.opts.first, leg);
      const r = this.opts.wire.request(frame);
      if (r?.cancel) this.inFlight.delete(r.context);
      else if (r) {
        const g = this.inFlight.get(r.context);
        if (g) g.frames.push(frame);
        else this.inFlight.set(r.context, { frames: [frame], audio: false });
      }
    }
    leg.socket.send(frame, isBinary ? { binary: true } : AS_TEXT);
  }

  protected legClosed(leg: Leg, code: number, reason: Buffer, lost: string | null): void {
    if (lost) void this.fail(leg, lost, null);
    else this.end(code, reason);
  }

  protected fromVendor(leg: Leg, frame: Buffer, isBinary: boolean): void {
    // While the next leg opens after an in-band failure, the failing vendor's other generations still flow.
    if (leg !== this.leg || this.state === "closed") return;
    const a = isBinary ? null : this.opts.wire.answer(frame);
    if (a?.kind === "failed" && this.state === "switching") {
      // Already failing over: kept for the case no candidate opens (then the client gets it as it came).
      this.lateFailures.push(frame);
      return;
    }
    if (a?.kind === "failed") {
      const g = a.context === null ? null : this.inFlight.get(a.context);
      // A failure before the generation's first audio is held back: it is retried on the next leg.
      const retried = g !== null && g !== undefined && !g.audio;
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
      for (const k of ["message", "error", "title"]) if (typeof m[k] === "string" && m[k] !== "") return (m[k] as string).slice(0, 500);
    } catch {
      // not JSON: the generic reason below
    }
    return "the vendor failed a generation";
  }

  /**
   * The current leg failed (`inBand`: the vendor's error frame for a generation, `passed` when the
   * client gets it as it came). Opens the next candidate; with none, the stream goes on (in-band) or
   * ends 1011 (socket) as it would without failover.
   */
  private async fail(leg: Leg, reason: string, inBand: { context: string | null; frame: Buffer; passed: boolean } | null): Promise<void> {
    if (leg !== this.leg || this.state !== "live") return;
    this.state = "switching";
    if (inBand?.passed) this.emit("message", inBand.frame, false);
    const next = await this.openNext(() => this.opts.next(leg, reason));
    // The client may have left while the next leg was opening (state changes across the await).
    if ((this.state as TtsLegs["state"]) === "closed") return;
    if (!next) {
      if (inBand && leg.socket.readyState === WebSocket.OPEN) {
        // The vendor's socket still serves: the generation fails as the vendor said, the stream goes on.
        if (!inBand.passed) {
          leg.meter.upstream(inBand.frame, false);
          this.emit("message", inBand.frame, false);
        }
        if (inBand.context !== null) this.inFlight.delete(inBand.context);
        for (const f of this.lateFailures) {
          leg.meter.upstream(f, false);
          this.emit("message", f, false);
        }
        this.lateFailures = [];
        this.state = "live";
        this.flushHeld(leg);
        return;
      }
      this.state = "closed";
      this.emit("error", new Error(reason));
      this.emit("close", 1006, Buffer.from(reason.slice(0, 120)));
      return;
    }
    this.lateFailures = [];
    leg.attempt.status = "error";
    leg.attempt.error ??= reason;
    const s = leg.socket;
    s.removeAllListeners("message");
    s.removeAllListeners("close");
    s.on("error", noop);
    if (s.readyState === WebSocket.OPEN) s.close(1000, "failover");
    setTimeout(() => s.terminate(), 2_000).unref();
    // Generations retried elsewhere bill nothing on the failed leg (they had no audio from it).
    for (const [context, g] of this.inFlight) if (!g.audio) (leg.meter as Partial<TtsLegMeter>).abandon?.(context);
    leg.release();
    this.leg = next;
    this.observer?.switched(leg, next);
    this.attach(next);
    for (const [context, g] of this.inFlight) {
      if (g.audio) {
        // Its audio came from the failed vendor: it cannot be continued elsewhere, it fails in-band.
        this.inFlight.delete(context);
        if (context !== inBand?.context) this.emit("message", Buffer.from(this.opts.wire.failure(context, `the vendor failed mid-generation: ${reason}`)), false);
        continue;
      }
      g.frames = g.frames.map((f) => this.opts.wire.retarget(f, leg, next));
      for (const f of g.frames) {
        next.meter.client(f, false);
        next.socket.send(f, AS_TEXT);
      }
    }
    this.state = "live";
    this.flushHeld(next);
  }

  private flushHeld(leg: Leg): void {
    const held = this.held;
    this.held = [];
    for (const f of held) {
      leg.meter.client(f, false);
      this.toLeg(leg, f, false);
    }
  }
}
