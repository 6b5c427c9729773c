import { performance } from "node:perf_hooks";
import { WebSocket } from "ws";
import type { Units, UpstreamTarget } from "../protocol.js";

/**
 * Reads the frames of one vendor protocol as they pass (never changes them). `client` returns true
 * for a frame that asks the vendor for work (audio, text to speak): the first one starts the TTFB
 * clock. `upstream` returns true for a frame that answers that work (a transcript, audio): the first
 * one stops it.
 */
export interface StreamMeter {
  client(frame: Buffer, isBinary: boolean): boolean;
  upstream(frame: Buffer, isBinary: boolean): boolean;
  /** Units of the stream's own model, not counting the `lines` below. */
  units(): Units;
  /** The vendor's in-band error that failed the stream (Deepgram's error frame, OpenAI's error event), if any. */
  error?(): string | null;
  /**
   * Record lines beside the stream's own, recorded at its end: generations on another model of the
   * same provider, and generations the vendor failed (their own status, message and served units).
   */
  lines?(): StreamLine[];
}

export interface StreamLine {
  target: UpstreamTarget;
  status: "success" | "error";
  error?: string;
  units: Units;
}

export interface RelaySummary {
  /** First answering frame after the first work frame, ms on a monotonic clock; null when none came. */
  ttfbMs: number | null;
  totalMs: number;
  units: Units;
  /**
   * Who ended the stream. `upstream_error`: the vendor's socket failed or dropped without a close
   * frame; `stalled`: a side did not drain its queue within the stall timeout; `governed`: the
   * gateway ended it (idle, max duration, a revoked key: see `reason`).
   */
  endedBy: "client" | "upstream" | "upstream_error" | "stalled" | "governed";
  closeCode: number;
  /** The close reason the client was given (or the vendor's). */
  reason: string;
  framesIn: number;
  framesOut: number;
}

export interface RelayOptions {
  meter: StreamMeter;
  /** Usage checkpoints of a long stream, so a budget trips for the next request. */
  checkpointMs?: number;
  onCheckpoint?(units: Units, elapsedMs: number): void;
  onEnd(summary: RelaySummary): void;
  /**
   * Reads a client text frame on its way upstream: the text to send (rewritten or not), or null to
   * keep the frame from the vendor (the gate answered it in-band).
   */
  clientText?: ((frame: string) => string | null) | null;
  /** Bytes queued toward a side that does not read (per direction) before the writing side is paused. */
  maxBufferedBytes?: number;
  /** How long a paused direction may stay over maxBufferedBytes before the stream is closed 1013. */
  stallMs?: number;
  /**
   * Called when a client frame the meter counted as work (audio, text to speak) is about to go
   * upstream, its units already in meter.units(): false keeps the frame from the vendor (the caller
   * ends the stream). The hook where a stream's spend is governed while it runs.
   */
  onWork?: (() => boolean) | null;
  /** Client frames that arrived before the vendor's socket opened: sent upstream first, in order. */
  queued?: ReadonlyArray<{ frame: Buffer; isBinary: boolean }>;
}

/**
 * The vendor side of a relay as relay() uses it: an open `ws` socket, or a socket that switches vendor
 * legs under the relay (src/gateway/failover/legs.ts) and reports only the stream's own end.
 */
export interface UpstreamSocket {
  readonly readyState: number;
  readonly bufferedAmount: number;
  readonly isPaused: boolean;
  send(data: Buffer | string, opts: { binary: boolean }): void;
  close(code?: number, reason?: string): void;
  terminate(): void;
  pause(): void;
  resume(): void;
  on(event: "message", listener: (data: WebSocket.RawData, isBinary: boolean) => void): unknown;
  on(event: "close", listener: (code: number, reason: Buffer) => void): unknown;
  on(event: "error", listener: (err: Error) => void): unknown;
}

/** The running relay, as the stream registry sees it: its activity and a way to end it. */
export interface RelayHandle {
  /** Frames relayed so far, both directions. */
  frames(): number;
  /** Ends the stream from the gateway's side: the client gets `code`/`reason`, the vendor a 1000. */
  end(code: number, reason: string): void;
  /** Sends a text frame to the client (an in-band answer of the gateway's own). */
  sendToClient(text: string): void;
}

export const CHECKPOINT_INTERVAL_MS = 5_000;
/** Default of gateway.streams.max_buffered_bytes (per direction). */
export const MAX_BUFFERED_BYTES = 4 * 1024 * 1024;
/** Default of gateway.streams.stall_timeout_s, in ms. */
export const STALL_MS = 10_000;
/** How long a client closed by the gateway has to answer the close handshake before its socket is cut. */
const CLIENT_CLOSE_GRACE_MS = 10_000;
/** How often a paused direction looks whether its queue drained (only while paused). */
const DRAIN_POLL_MS = 20;
/** Close code when the vendor's socket fails under a relayed stream. */
export const CLOSE_UPSTREAM_LOST = 1011;
/** Close code when a side stops reading and its queue stays over the bound past the stall timeout. */
export const CLOSE_OVERFLOW = 1013;

/** A close code that may be sent on (1005/1006/1015 are reserved to report, never to send). */
export function sendableCloseCode(code: number, fallback = 1000): number {
  const ok = (code >= 1000 && code <= 1014 && code !== 1004 && code !== 1005 && code !== 1006) || (code >= 3000 && code <= 4999);
  return ok ? code : fallback;
}

/** Close reasons are at most 123 bytes; a vendor's reason is kept when it fits. */
function reasonText(reason: Buffer | Uint8Array | string): string {
  const text = typeof reason === "string" ? reason : Buffer.from(reason).toString("utf8");
  return Buffer.byteLength(text) <= 123 ? text : "";
}

/** send() options per frame kind, shared: ws copies them, so one object each serves every frame. */
const AS_BINARY = { binary: true } as const;
const AS_TEXT = { binary: false } as const;

/** ws hands a message over as one Buffer (binaryType nodebuffer), or as fragments/ArrayBuffer if configured otherwise. */
export function asBuffer(data: unknown): Buffer {
  if (Buffer.isBuffer(data)) return data;
  if (Array.isArray(data)) return Buffer.concat(data as Buffer[]);
  return Buffer.from(data as ArrayBuffer);
}

/**
 * Relays one client WebSocket (accepted by the gateway listener's upgrade handler) and one open upstream
 * socket: frames pass both ways as they are, text stays text and binary stays binary. Either side
 * closing closes the other (a client that leaves aborts the vendor stream); the meter reads every
 * frame and the summary goes to onEnd exactly once. Backpressure: when the side a frame goes to has
 * more than maxBufferedBytes queued, the side it came from is paused (its socket stops being read,
 * so TCP pushes back on the sender) until the queue drains; still over after stallMs, the stream is
 * closed 1013.
 */
export function relay(client: WebSocket, upstream: UpstreamSocket, opts: RelayOptions): RelayHandle {
  const startedAt = performance.now();
  const maxBuffered = opts.maxBufferedBytes ?? MAX_BUFFERED_BYTES;
  const stallMs = opts.stallMs ?? STALL_MS;
  let workAt: number | null = null;
  let firstByteAt: number | null = null;
  let framesIn = 0;
  let framesOut = 0;
  let ended = false;
  let lastCheckpoint = "";

  const checkpoint = opts.onCheckpoint;
  const gate = opts.clientText ?? null;
  const timer = checkpoint
    ? setInterval(() => {
        const units = opts.meter.units();
        const key = JSON.stringify(units);
        if (key === lastCheckpoint) return;
        lastCheckpoint = key;
        checkpoint(units, performance.now() - startedAt);
      }, opts.checkpointMs ?? CHECKPOINT_INTERVAL_MS)
    : null;
  timer?.unref();
  const stalls: NodeJS.Timeout[] = [];

  const finish = (endedBy: RelaySummary["endedBy"], closeCode: number, reason: string) => {
    if (ended) return;
    ended = true;
    if (timer) clearInterval(timer);
    for (const t of stalls) clearInterval(t);
    opts.onEnd({
      ttfbMs: workAt !== null && firstByteAt !== null ? firstByteAt - workAt : null,
      totalMs: performance.now() - startedAt,
      units: opts.meter.units(),
      endedBy,
      closeCode,
      reason,
      framesIn,
      framesOut,
    });
  };

  /** Closes both sides from the gateway: the client with code/reason, the vendor normally (or cut). */
  const endBoth = (endedBy: RelaySummary["endedBy"], code: number, reason: string) => {
    if (ended) return;
    if (client.readyState === WebSocket.OPEN) client.close(code, reason);
    // A client that stopped reading answers the close handshake late or never: cut it after a grace period.
    setTimeout(() => client.terminate(), CLIENT_CLOSE_GRACE_MS).unref();
    if (upstream.readyState === WebSocket.OPEN) upstream.close(1000, reason);
    setTimeout(() => upstream.terminate(), 2_000).unref();
    finish(endedBy, code, reason);
  };

  /**
   * `reader` stopped being read because `writer` has too much queued: poll (only while paused) until
   * the queue is back under the bound, then resume; past the stall timeout, close 1013.
   */
  const pauseUntilDrained = (reader: WebSocket | UpstreamSocket, writer: WebSocket | UpstreamSocket) => {
    if (reader.isPaused) return;
    reader.pause();
    const pausedAt = performance.now();
    const poll = setInterval(() => {
      if (ended) return clearInterval(poll);
      if (writer.bufferedAmount <= maxBuffered) {
        clearInterval(poll);
        stalls.splice(stalls.indexOf(poll), 1);
        reader.resume();
      } else if (performance.now() - pausedAt >= stallMs) {
        clearInterval(poll);
        endBoth("stalled", CLOSE_OVERFLOW, "relay buffer full: a side stopped reading");
      }
    }, DRAIN_POLL_MS);
    stalls.push(poll);
  };

  const meter = opts.meter;
  const onWork = opts.onWork ?? null;
  const toUpstream = (frame: Buffer, isBinary: boolean) => {
    if (meter.client(frame, isBinary)) {
      if (workAt === null) workAt = performance.now();
      if (onWork && !onWork()) return;
    }
    if (ended || upstream.readyState !== WebSocket.OPEN) return;
    if (gate && !isBinary) {
      const decoded = frame.toString("utf8");
      const text = gate(decoded);
      if (text === null) return;
      // An untouched frame goes on as the bytes that came; only a rewritten one is re-encoded.
      upstream.send(text === decoded ? frame : text, AS_TEXT);
    } else {
      // Frames go on as the bytes that came (no decode, no copy).
      upstream.send(frame, isBinary ? AS_BINARY : AS_TEXT);
    }
    if (upstream.bufferedAmount > maxBuffered) pauseUntilDrained(client, upstream);
  };
  for (const q of opts.queued ?? []) {
    framesIn++;
    toUpstream(q.frame, q.isBinary);
  }

  client.on("message", (data, isBinary) => {
    framesIn++;
    toUpstream(asBuffer(data), isBinary);
  });

  upstream.on("message", (data, isBinary) => {
    const frame = asBuffer(data);
    framesOut++;
    if (meter.upstream(frame, isBinary) && firstByteAt === null && workAt !== null) firstByteAt = performance.now();
    if (client.readyState !== WebSocket.OPEN) return;
    client.send(frame, isBinary ? AS_BINARY : AS_TEXT);
    if (client.bufferedAmount > maxBuffered) pauseUntilDrained(upstream, client);
  });

  client.on("close", (code, reason) => {
    if (upstream.readyState === WebSocket.OPEN || upstream.readyState === WebSocket.CONNECTING) {
      upstream.close(sendableCloseCode(code), reasonText(reason));
      // A vendor that never answers the close handshake is cut after a grace period.
      setTimeout(() => upstream.terminate(), 2_000).unref();
    }
    finish("client", code, reasonText(reason));
  });
  client.on("error", () => {});

  let upstreamFailed = false;
  upstream.on("error", () => {
    upstreamFailed = true;
  });
  upstream.on("close", (code, reason) => {
    const lost = upstreamFailed || code === 1006;
    const text = lost ? "upstream connection lost" : reasonText(reason);
    if (client.readyState === WebSocket.OPEN) client.close(lost ? CLOSE_UPSTREAM_LOST : sendableCloseCode(code), text);
    finish(lost ? "upstream_error" : "upstream", lost ? CLOSE_UPSTREAM_LOST : code, text);
  });
  // connectUpstream hands the socket over paused: frames the vendor sent first flow from here.
  if (upstream.isPaused) upstream.resume();

  return {
    frames: () => framesIn + framesOut,
    end: (code, reason) => endBoth("governed", code, reason),
    sendToClient(text) {
      if (client.readyState === WebSocket.OPEN) client.send(text, AS_TEXT);
    },
  };
}
