import { EventEmitter } from "node:events";
import { WebSocket } from "ws";
import { asBuffer, type StreamMeter, type UpstreamSocket } from "../ws/relay.js";
import type { Attempt } from "../attempt.js";
import type { ProviderType } from "../../config/schema.js";
import type { UpstreamTarget, VendorProtocol } from "../protocol.js";

/**
 * A leg's vendor socket as the leg switches use it: the vendor's own WebSocket, or a socket that
 * translates another vendor's protocol into the client's (src/gateway/failover/openai-transcription-leg.ts).
 */
export interface LegSocket extends UpstreamSocket {
  removeAllListeners(event: "message" | "close"): unknown;
  on(event: "message", listener: (data: WebSocket.RawData, isBinary: boolean) => void): unknown;
  on(event: "close", listener: (code: number, reason: Buffer) => void): unknown;
  on(event: "error", listener: (err: Error) => void): unknown;
  /** A vendor that stays silent while nobody speaks is known alive by its socket's pongs (the stall clock counts them). */
  on(event: "pong", listener: () => void): unknown;
  ping(): void;
  /**
   * A leg that speaks the client's protocol for a vendor of another: whether that vendor sends nothing
   * while nobody speaks (absent: as the client's protocol says, LiveSttWire.quiet).
   */
  readonly quiet?: boolean;
}

/** One vendor socket of a live stream: its target, its own meter and record, its limiter grant. */
export interface Leg {
  socket: LegSocket;
  target: UpstreamTarget;
  meter: StreamMeter;
  attempt: Attempt;
  release(): void;
  /** Where this leg's audio begins on the client's timeline, in seconds (0 for the first leg). */
  offset: number;
}

/**
 * A live stream's way to a candidate of another protocol: the vendor's socket is opened as that
 * protocol's (its path, its provider's auth and header policy) and wrapped in a LegSocket that speaks
 * the client's protocol, with a meter of what that vendor billed.
 */
export interface LegBridge {
  /** Provider types whose candidates this bridge serves. */
  providerTypes: readonly ProviderType[];
  /** The vendor's protocol: its upstream auth and header policy. */
  protocol: VendorProtocol;
  /** The vendor's path and headers, or null when this candidate cannot serve the stream as it stands (it is skipped). */
  upstream(target: UpstreamTarget): { path: string; headers: Record<string, string> } | null;
  /** The opened vendor socket as a leg of the client's protocol (`requestId`: the stream's, for its messages). */
  leg(socket: WebSocket, target: UpstreamTarget, requestId: string): { socket: LegSocket; meter: StreamMeter };
}

/** What the session does at a seam: record the failed leg, start recording the new one, note the gap. */
export interface LegObserver {
  switched(failed: Leg, next: Leg): void;
  gap(leg: Leg, ms: number): void;
}

const noop = () => {};

/** Vendor close codes that fail a leg: lost (1006) and the server-side failures (internal error, restart, overload). */
const FAILING_CLOSES = new Set([1006, 1011, 1012, 1013, 1014]);

/**
 * What relay() sees of a stream whose vendor can change underneath it (live STT in legs.ts, TTS
 * generations in tts-legs.ts): one upstream socket whose flow control and close act on the current
 * leg. Subclasses say what a vendor frame means and what a leg's close does.
 */
export abstract class SwitchingUpstream extends EventEmitter implements UpstreamSocket {
  protected leg: Leg;
  protected state: "live" | "switching" | "closed" = "live";
  observer: LegObserver | null = null;

  protected constructor(first: Leg) {
    super();
    this.leg = first;
  }

  get current(): Leg {
    return this.leg;
  }
  get readyState(): number {
    return this.state === "closed" ? WebSocket.CLOSED : WebSocket.OPEN;
  }
  get bufferedAmount(): number {
    return this.state === "live" ? this.leg.socket.bufferedAmount : 0;
  }
  get isPaused(): boolean {
    return this.leg.socket.isPaused;
  }
  pause(): void {
    this.leg.socket.pause();
  }
  resume(): void {
    this.leg.socket.resume();
  }

  abstract send(data: Buffer | string, opts: { binary: boolean }): void;

  /** The client left or the gateway ended the stream: the current leg closes normally. */
  close(code?: number, reason?: string): void {
    if (this.state === "closed") return;
    this.state = "closed";
    this.stopped();
    const s = this.leg.socket;
    if (s.readyState === WebSocket.OPEN || s.readyState === WebSocket.CONNECTING) s.close(code, reason);
  }

  terminate(): void {
    this.state = "closed";
    this.stopped();
    this.leg.socket.terminate();
  }

  /** The stream is over (closed, terminated or ended by its vendor): release what the subclass holds. */
  protected stopped(): void {}

  /** A sign of life from `leg` that is no frame (its socket's pong). */
  protected alive(_leg: Leg): void {}

  /** A vendor frame of `leg` (maybe no longer the current one). */
  protected abstract fromVendor(leg: Leg, frame: Buffer, isBinary: boolean): void;

  /**
   * The current leg's socket closed while live: `lost` says why when the close was a failure (socket
   * error or a failing code), null for a normal close.
   */
  protected abstract legClosed(leg: Leg, code: number, reason: Buffer, lost: string | null): void;

  /** The stream's own end: the vendor closed normally. */
  protected end(code: number, reason: Buffer): void {
    this.state = "closed";
    this.stopped();
    this.emit("close", code, reason);
  }

  /**
   * The next leg from `open`, or null when none is left or the stream closed while it
   * was opening (then the new leg is closed and released here).
   */
  protected async openNext(open: () => Promise<Leg | null>): Promise<Leg | null> {
    let next: Leg | null = null;
    try {
      next = await open();
    } catch {
      next = null;
    }
    // The client may have left while the next leg was opening (state changes across the await).
    if (next && this.state === "closed") {
      next.socket.on("error", noop);
      next.socket.close(1000);
      next.release();
      return null;
    }
    return next;
  }

  /**
   * A failed leg let go: recorded as an error, its events no longer reach the stream, closed
   * normally and cut if it lingers.
   */
  protected retire(leg: Leg, reason: string): void {
    leg.attempt.status = "error";
    leg.attempt.error ??= reason;
    const s = leg.socket;
    s.removeAllListeners("message");
    s.removeAllListeners("close");
    s.on("error", noop);
    if (s.readyState === WebSocket.OPEN) s.close(1000, "failover");
    setTimeout(() => s.terminate(), 2_000).unref();
  }

  protected attach(leg: Leg): void {
    const s = leg.socket;
    let errored = false;
    s.on("message", (data, isBinary) => this.fromVendor(leg, asBuffer(data), isBinary));
    s.on("pong", () => this.alive(leg));
    s.on("error", () => {
      errored = true;
    });
    s.on("close", (code, reason) => {
      if (leg !== this.leg || this.state !== "live") return;
      const text = Buffer.from(reason).toString("utf8");
      const lost = errored || code === 1006 ? "upstream connection lost mid-stream" : FAILING_CLOSES.has(code) ? `vendor closed the stream with ${code}${text ? ` (${text})` : ""}` : null;
      this.legClosed(leg, code, reason, lost);
    });
    // connectUpstream hands sockets over paused: what the vendor sent first flows from here.
    if (s.isPaused) s.resume();
  }
}
