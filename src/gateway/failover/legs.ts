import { performance } from "node:perf_hooks";
import { WebSocket } from "ws";
import type { Units } from "../protocol.js";
import type { StreamMeter } from "../ws/relay.js";
import type { LiveSttWire } from "./deepgram-live.js";
import { ReplayBuffer } from "./replay-buffer.js";
import { type Leg, SwitchingUpstream } from "./switching-upstream.js";
import { FinalsGate } from "./transcripts.js";

export interface LegSwitchOptions {
  first: Leg;
  wire: LiveSttWire;
  /** No vendor frame for this long while client audio keeps arriving fails the leg (gateway.streams.stall_ms). */
  stallMs: number;
  /** Client audio kept for replay (gateway.streams.replay_seconds). */
  replaySeconds: number;
  /** Opens the next candidate after `failed` (its attempt status fallback), or null when none is left. */
  next(failed: Leg, reason: string): Promise<Leg | null>;
}

const AS_BINARY = { binary: true } as const;
const AS_TEXT = { binary: false } as const;

/**
 * The vendor side of a live STT relay that survives its vendor failing: relay() sees one upstream
 * socket; underneath, legs switch. A leg fails when its socket closes abnormally, the vendor sends an
 * in-band error (its meter's error(), the quota-after-connect case included), or it sends nothing for
 * `stallMs` while client audio keeps arriving. Then the next candidate is opened, sent the audio
 * received after the last final result the client got (kept in a ReplayBuffer), and relayed on: its
 * results are moved onto the client's timeline and a final the client already has is dropped
 * (FinalsGate). Only with no candidate left does relay() see a close (1011, as without failover).
 *
 * Before any failure the per-frame work is the replay buffer's append of client audio, a counter,
 * and a byte scan of vendor frames for finals (parsed only when one is).
 */
export class LegSwitch extends SwitchingUpstream {
  private readonly replay: ReplayBuffer;
  private readonly gate = new FinalsGate();
  /** Set once a seam happened: later legs' results are rewritten and gated. */
  private switchedOnce = false;
  /** Client text frames that arrived while a leg was being opened (CloseStream, Finalize): sent to the next. */
  private held: Buffer[] = [];
  private clientClosing = false;
  /** The client's closing frame (CloseStream): a leg opened after it was sent gets it after the replay. */
  private closingFrame: Buffer | null = null;
  private vendorFrames = 0;
  private clientAudio = 0;
  private readonly stallTimer: NodeJS.Timeout;
  private stallSeenFrames = -1;
  private stallSeenAudio = 0;
  private stallFrom = performance.now();
  /** When the current seam's failure was detected (the gap runs to the new leg's first result). */
  private failedAt: number | null = null;
  /** Answers counted on the last vendor frame handed to relay() (the composite meter reads it). */
  private lastAnswer = false;
  /** Units of the legs that failed, for the stream's total. */
  private readonly past: Units[] = [];
  constructor(private readonly opts: LegSwitchOptions) {
    super(opts.first);
    this.replay = new ReplayBuffer(Math.ceil(opts.replaySeconds * opts.wire.bytesPerSecond));
    this.attach(opts.first);
    this.stallTimer = setInterval(() => this.checkStall(), Math.max(10, Math.floor(opts.stallMs / 4)));
    this.stallTimer.unref();
  }

  /** The meter relay() reads: client audio goes to the current leg's meter (what that vendor was sent). */
  readonly meter: StreamMeter = {
    client: (frame, isBinary) => {
      // Audio arriving while no leg is live is metered when it is replayed to the next one.
      if (this.state !== "live" || this.leg.socket.readyState !== WebSocket.OPEN) return isBinary;
      return this.leg.meter.client(frame, isBinary);
    },
    // Vendor frames are metered by their leg's meter as they arrive (raw, before any rewrite).
    upstream: () => this.lastAnswer,
    units: () => this.totalUnits(),
    error: () => null,
  };

  /** The stream's units across legs (what budget hooks see). */
  totalUnits(): Units {
    const out: Units = { ...this.leg.meter.units() };
    for (const u of this.past) {
      for (const k of Object.keys(u) as (keyof Units)[]) {
        const v = u[k];
        if (typeof v === "number") (out as Record<string, number>)[k] = ((out[k] as number | undefined) ?? 0) + v;
      }
    }
    return out;
  }

  send(data: Buffer | string, opts: { binary: boolean }): void {
    const wire = this.opts.wire;
    const audio = wire.audio ? wire.audio.bytes(data, opts.binary) : opts.binary ? data.length : 0;
    if (audio > 0) {
      this.replay.append(typeof data === "string" ? Buffer.from(data) : data, audio);
      this.clientAudio++;
    } else if (!opts.binary && wire.closing(data, false)) {
      this.clientClosing = true;
      this.closingFrame = Buffer.from(data);
      if (this.state === "switching") return;
    }
    // After a seam, a frame naming the model names the current leg's.
    const out = this.switchedOnce && wire.forLeg && audio === 0 && !opts.binary ? wire.forLeg(data.toString(), this.leg.target) : data;
    if (this.state === "live") this.leg.socket.send(out, opts);
    else if (this.state === "switching" && audio === 0) this.held.push(Buffer.from(data));
  }

  protected override stopped(): void {
    clearInterval(this.stallTimer);
  }

  protected legClosed(leg: Leg, code: number, reason: Buffer, lost: string | null): void {
    if (lost && !this.clientClosing) void this.fail(leg, lost, code, reason.toString("utf8"));
    else this.end(code, reason);
  }

  protected override alive(leg: Leg): void {
    if (leg === this.leg && this.state === "live") this.vendorFrames++;
  }

  protected fromVendor(leg: Leg, frame: Buffer, isBinary: boolean): void {
    if (leg !== this.leg || this.state !== "live") return;
    this.vendorFrames++;
    const answer = leg.meter.upstream(frame, isBinary);
    if (leg.meter.error) {
      const err = leg.meter.error();
      if (err !== null && !this.clientClosing && (this.opts.wire.fatal?.(frame) ?? true)) {
        void this.fail(leg, err, 1011, "", frame);
        return;
      }
    }
    const wire = this.opts.wire;
    if (!this.switchedOnce) {
      // The first leg's frames pass as they came; only a final is read, to mark the audio it settled.
      if (wire.maybeFinal(frame, isBinary)) {
        const r = wire.result(frame, isBinary, 0);
        if (r?.span?.isFinal) this.finalized(r.span.end, r.span);
      }
      this.lastAnswer = answer;
      this.emit("message", frame, isBinary);
      return;
    }
    const r = wire.result(frame, isBinary, leg.offset);
    if (r !== null && r.span === null) {
      this.lastAnswer = answer;
      this.emit("message", r.frame, isBinary);
      return;
    }
    if (r?.span) {
      if (this.failedAt !== null) {
        this.observer?.gap(leg, performance.now() - this.failedAt);
        this.failedAt = null;
      }
      // A result the client already has as final (the replay overlaps it by up to a frame) is dropped.
      if (!this.gate.admit(r.span)) return;
      if (r.span.isFinal) this.replay.finalizedUpTo(Math.floor(r.span.end * wire.bytesPerSecond));
      this.lastAnswer = answer;
      this.emit("message", r.frame, isBinary);
      return;
    }
    this.lastAnswer = answer;
    this.emit("message", frame, isBinary);
  }

  private finalized(end: number, span: { start: number; end: number; isFinal: boolean }): void {
    this.gate.admit(span);
    this.replay.finalizedUpTo(Math.floor(end * this.opts.wire.bytesPerSecond));
  }

  private checkStall(): void {
    if (this.state !== "live") return;
    const s = this.leg.socket;
    // A vendor silent while nobody speaks is asked for a pong each tick (counted by alive()).
    if ((s.quiet ?? this.opts.wire.quiet) && s.readyState === WebSocket.OPEN) s.ping();
    const now = performance.now();
    if (this.vendorFrames !== this.stallSeenFrames) {
      this.stallSeenFrames = this.vendorFrames;
      this.stallSeenAudio = this.clientAudio;
      this.stallFrom = now;
      return;
    }
    // Silence from the vendor is a failure only while the client keeps sending audio (or awaits the
    // answer to its closing frame).
    if (now - this.stallFrom >= this.opts.stallMs && (this.clientAudio > this.stallSeenAudio || this.clientClosing)) {
      // Timers run before pending socket reads: a busy event loop could have the vendor's answers
      // queued unread. Judge again once they are read (setImmediate runs after the poll phase).
      const leg = this.leg;
      const seen = this.vendorFrames;
      setImmediate(() => {
        if (leg === this.leg && this.vendorFrames === seen) void this.fail(leg, `the vendor sent nothing for ${this.opts.stallMs} ms while audio kept arriving`, 1011, "");
      });
    }
  }

  /** The current leg failed: open the next candidate and replay to it, or end the stream when none is left. */
  private async fail(leg: Leg, reason: string, code: number, closeReason: string, errorFrame?: Buffer): Promise<void> {
    if (leg !== this.leg || this.state !== "live") return;
    this.state = "switching";
    this.failedAt = performance.now();
    this.retire(leg, reason);
    // A stream that can no longer be replayed elsewhere ends as it would without failover.
    const servable = this.opts.wire.servable?.() ?? true;
    const next = servable ? await this.openNext(() => this.opts.next(leg, reason)) : null;
    // The client may have left while the next leg was opening (state changes across the await).
    if ((this.state as LegSwitch["state"]) === "closed") return;
    if (!next) {
      // No candidate left: the client sees what it would have seen without failover.
      if (errorFrame) this.emit("message", errorFrame, false);
      this.state = "closed";
      clearInterval(this.stallTimer);
      if (code === 1006) this.emit("error", new Error(reason));
      this.emit("close", code, Buffer.from(closeReason || reason.slice(0, 120)));
      return;
    }
    this.past.push(leg.meter.units());
    leg.release();
    const pending = this.replay.pending();
    next.offset = pending.startOffset / this.opts.wire.bytesPerSecond;
    this.leg = next;
    this.switchedOnce = true;
    this.observer?.switched(leg, next);
    this.attach(next);
    const wire = this.opts.wire;
    // A protocol that sets its stream up in messages: the new leg gets the client's setup first.
    for (const t of wire.opening?.(next.target) ?? []) {
      next.meter.client(Buffer.from(t), false);
      next.socket.send(t, AS_TEXT);
    }
    const audioAs = wire.audio && !wire.audio.binary ? AS_TEXT : AS_BINARY;
    for (const frame of pending.frames) {
      next.meter.client(frame, audioAs.binary);
      next.socket.send(frame, audioAs);
    }
    for (const t of this.held) {
      const text = wire.forLeg ? Buffer.from(wire.forLeg(t.toString(), next.target)) : t;
      next.meter.client(text, false);
      next.socket.send(text, AS_TEXT);
    }
    this.held = [];
    // A stream that was ending ends on the new leg too, once it has heard the rest.
    if (this.closingFrame) next.socket.send(this.closingFrame, { binary: false });
    this.stallSeenFrames = -1;
    this.state = "live";
  }

}
