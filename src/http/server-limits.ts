import type { IncomingMessage, RequestListener, Server, ServerOptions } from "node:http";
import type { Socket } from "node:net";
import type { ServeConfig } from "../config/schema.js";

type Limits = Pick<ServeConfig, "headers_timeout_ms" | "request_timeout_ms" | "min_body_bytes_per_second" | "body_rate_window_ms">;

/**
 * Options of node's createServer that bound how long a client may take to send a request: node
 * checks the header and request timeouts of open connections every `connectionsCheckingInterval`
 * (30 s by default, far too coarse for a 15 s header timeout).
 */
export function serverOptions(limits: Limits): ServerOptions {
  return { connectionsCheckingInterval: Math.max(100, Math.min(1_000, Math.floor(limits.headers_timeout_ms / 4))) };
}

/**
 * Applies the timeouts to a created server: the request head within headers_timeout_ms, the whole
 * request (body included) within request_timeout_ms; past either node answers 408 and closes. A
 * trickled body is cut earlier by the minimum body rate (withBodyRate).
 */
export function applyServerLimits(server: Server, limits: Limits): void {
  server.headersTimeout = limits.headers_timeout_ms;
  server.requestTimeout = Math.max(limits.request_timeout_ms, limits.headers_timeout_ms);
}

interface Watched {
  req: IncomingMessage;
  socket: Socket;
  bytes: number;
  /** Date.now() of the last look: each request is judged over at least one whole window. */
  at: number;
}

/**
 * The request listener with a minimum body rate: a request whose body is still arriving is looked at
 * once per body_rate_window_ms (one timer for all of them, none while no body is pending); one that
 * received fewer than min_body_bytes_per_second × the window since the last look has its connection
 * closed. Slow-body clients (headers, then a byte now and then) otherwise hold a socket and a request
 * until the request timeout. Bodies the server reads as they come are never paused by Voxgate, so
 * only the client's pace is measured.
 */
export function withBodyRate(listener: RequestListener, limits: Limits): RequestListener {
  const perWindow = Math.floor((limits.min_body_bytes_per_second * limits.body_rate_window_ms) / 1000);
  if (perWindow <= 0) return listener;
  const watched = new Set<Watched>();
  let timer: NodeJS.Timeout | null = null;
  const tick = () => {
    const t = Date.now();
    for (const w of watched) {
      if (w.req.complete || w.socket.destroyed) {
        watched.delete(w);
        continue;
      }
      if (t - w.at < limits.body_rate_window_ms) continue;
      const now = w.socket.bytesRead;
      if (now - w.bytes < perWindow) {
        watched.delete(w);
        w.socket.destroy();
      } else {
        w.bytes = now;
        w.at = t;
      }
    }
    if (watched.size === 0 && timer) {
      clearInterval(timer);
      timer = null;
    }
  };
  // Requests of the current parse, looked at once it is over (see below).
  const arrived: IncomingMessage[] = [];
  const lookAtArrived = () => {
    for (const req of arrived) {
      const declared = Number(req.headers["content-length"] ?? 0);
      // A body already buffered whole (the usual case: it came with the head) needs no watch.
      const pending = req.headers["transfer-encoding"] !== undefined || (declared > 0 && declared !== req.readableLength);
      if (pending && !req.complete) {
        watched.add({ req, socket: req.socket, bytes: req.socket.bytesRead, at: Date.now() });
        if (!timer) {
          timer = setInterval(tick, Math.max(50, Math.floor(limits.body_rate_window_ms / 2)));
          timer.unref();
        }
      }
    }
    arrived.length = 0;
  };
  return (req, res) => {
    // Node emits a request before its parser pushes the body bytes that came in the same packet: looked
    // at here, every request with a body was watched, and kept alive until the timer's next tick (up to
    // half a window: ~25,000 requests at 5,000 calls/s, all promoted to the old generation). A tick
    // queued now runs once that parse is over, and before any the listener queues (a body it reads at
    // once is watched, as before).
    if (arrived.length === 0) process.nextTick(lookAtArrived);
    arrived.push(req);
    listener(req, res);
  };
}
