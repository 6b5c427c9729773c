import { performance } from "node:perf_hooks";
import { WebSocket } from "ws";
import type { Units } from "../protocol.js";

/**
 * Reads the frames of one vendor protocol as they pass (never changes them). `client` returns true
 * for a frame that asks the vendor for work (audio, text to speak): the first one starts the TTFB
 * clock. `upstream` returns true for a frame that answers that work (a transcript, audio): the first
 * one stops it.
 */
export interface StreamMeter {
  client(frame: Buffer, isBinary: boolean): boolean;
  upstream(frame: Buffer, isBinary: boolean): boolean;
  units(): Units;
}

export interface RelaySummary {
  /** First answering frame after the first work frame, ms on a monotonic clock; null when none came. */
  ttfbMs: number | null;
  totalMs: number;
  units: Units;
  /** Who ended the stream. `upstream_error`: the vendor's socket failed or dropped without a close frame. */
  endedBy: "client" | "upstream" | "upstream_error" | "overflow";
  closeCode: number;
  framesIn: number;
  framesOut: number;
}

export interface RelayOptions {
  meter: StreamMeter;
  /** Usage checkpoints of a long stream, so a budget trips for the next request (docs/api/gateway.md, budgets). */
  checkpointMs?: number;
  onCheckpoint?(units: Units, elapsedMs: number): void;
  onEnd(summary: RelaySummary): void;
  /** Rewrites a client text frame on its way upstream (a model named inside a session message). */
  rewriteClientText?: ((frame: string) => string) | null;
}

export const CHECKPOINT_INTERVAL_MS = 5_000;
/** Bytes a slow side may leave queued before the relay gives up on the stream (memory bound). */
export const MAX_BUFFERED_BYTES = 16 * 1024 * 1024;
/** Close code when the vendor's socket fails under a relayed stream. */
export const CLOSE_UPSTREAM_LOST = 1011;
/** Close code when a side stops reading and the queue passes MAX_BUFFERED_BYTES. */
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
function asBuffer(data: unknown): Buffer {
  if (Buffer.isBuffer(data)) return data;
  if (Array.isArray(data)) return Buffer.concat(data as Buffer[]);
  return Buffer.from(data as ArrayBuffer);
}

/**
 * Relays one client WebSocket (accepted by node-server's upgradeWebSocket) and one open upstream
 * socket: frames pass both ways as they are, text stays text and binary stays binary. Either side
 * closing closes the other (a client that leaves aborts the vendor stream); the meter reads every
 * frame and the summary goes to onEnd exactly once.
 */
export function relay(client: WebSocket, upstream: WebSocket, opts: RelayOptions): void {
  const startedAt = performance.now();
  let workAt: number | null = null;
  let firstByteAt: number | null = null;
  let framesIn = 0;
  let framesOut = 0;
  let ended = false;
  let lastCheckpoint = "";

  const checkpoint = opts.onCheckpoint;
  const rewrite = opts.rewriteClientText ?? null;
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

  const finish = (endedBy: RelaySummary["endedBy"], closeCode: number) => {
    if (ended) return;
    ended = true;
    if (timer) clearInterval(timer);
    opts.onEnd({
      ttfbMs: workAt !== null && firstByteAt !== null ? firstByteAt - workAt : null,
      totalMs: performance.now() - startedAt,
      units: opts.meter.units(),
      endedBy,
      closeCode,
      framesIn,
      framesOut,
    });
  };

  const overflow = () => {
    if (client.readyState === WebSocket.OPEN) client.close(CLOSE_OVERFLOW, "relay buffer full: a side stopped reading");
    upstream.terminate();
    finish("overflow", CLOSE_OVERFLOW);
  };

  const meter = opts.meter;
  client.on("message", (data, isBinary) => {
    const frame = asBuffer(data);
    framesIn++;
    if (meter.client(frame, isBinary) && workAt === null) workAt = performance.now();
    if (upstream.readyState !== WebSocket.OPEN) return;
    if (upstream.bufferedAmount > MAX_BUFFERED_BYTES) return overflow();
    // Frames go on as the bytes that came (no decode, no copy); only a rewritten text frame is re-encoded.
    upstream.send(rewrite && !isBinary ? rewrite(frame.toString("utf8")) : frame, isBinary ? AS_BINARY : AS_TEXT);
  });

  upstream.on("message", (data, isBinary) => {
    const frame = asBuffer(data);
    framesOut++;
    if (meter.upstream(frame, isBinary) && firstByteAt === null && workAt !== null) firstByteAt = performance.now();
    if (client.readyState !== WebSocket.OPEN) return;
    client.send(frame, isBinary ? AS_BINARY : AS_TEXT);
  });

  client.on("close", (code, reason) => {
    if (upstream.readyState === WebSocket.OPEN || upstream.readyState === WebSocket.CONNECTING) {
      upstream.close(sendableCloseCode(code), reasonText(reason));
      // A vendor that never answers the close handshake is cut after a grace period.
      setTimeout(() => upstream.terminate(), 2_000).unref();
    }
    finish("client", code);
  });
  client.on("error", () => {});

  let upstreamFailed = false;
  upstream.on("error", () => {
    upstreamFailed = true;
  });
  upstream.on("close", (code, reason) => {
    const lost = upstreamFailed || code === 1006;
    if (client.readyState === WebSocket.OPEN) {
      if (lost) client.close(CLOSE_UPSTREAM_LOST, "upstream connection lost");
      else client.close(sendableCloseCode(code), reasonText(reason));
    }
    finish(lost ? "upstream_error" : "upstream", lost ? CLOSE_UPSTREAM_LOST : code);
  });
  // connectUpstream hands the socket over paused: frames the vendor sent first flow from here.
  if (upstream.isPaused) upstream.resume();
}
