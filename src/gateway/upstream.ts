import type { IncomingHttpHeaders } from "node:http";
import type { Dispatcher, Pool } from "undici";
import { loadUndici } from "../http/undici.js";
import { bareHost, type ConnectLookup, guardedLookup } from "../manage/url-policy.js";
import type { UpstreamRequest, UpstreamTarget } from "./protocol.js";

/** Keep-alive connections per provider origin (calls beyond it queue in the pool). */
export const UPSTREAM_CONNECTIONS = 256;
/** Longest pause between two body chunks of an upstream answer before it counts as dropped. */
export const UPSTREAM_BODY_TIMEOUT_MS = 300_000;

/**
 * One undici Pool per provider origin with keep-alive, shared by every call: no connection set-up on
 * the hot path. Redirects are never followed. The resolved address is checked at connect time:
 * metadata addresses are refused always, internal ones unless the host is trusted (a yaml provider or
 * serve.provider_base_url_hosts), as for provider tests.
 */
export class GatewayUpstreams {
  private readonly pools = new Map<string, { pool: Pool; basePath: string }>();
  private undici: typeof import("undici") | null = null;
  constructor(private readonly trustedHosts: ReadonlySet<string>) {}

  private poolFor(undici: typeof import("undici"), baseUrl: string): { pool: Pool; basePath: string } {
    let entry = this.pools.get(baseUrl);
    if (!entry) {
      const url = new URL(baseUrl);
      const lookup = this.lookupFor(baseUrl);
      const pool = new undici.Pool(url.origin, {
        connections: UPSTREAM_CONNECTIONS,
        keepAliveTimeout: 30_000,
        keepAliveMaxTimeout: 600_000,
        connect: { lookup, timeout: 10_000 },
      });
      entry = { pool, basePath: url.pathname.replace(/\/+$/, "") };
      this.pools.set(baseUrl, entry);
    }
    return entry;
  }

  /**
   * The connect-time address check for a connection to `baseUrl` (src/manage/url-policy.ts): the
   * same for the HTTP pools and the WebSocket relays, which pass it to connectUpstream.
   */
  lookupFor(baseUrl: string): ConnectLookup {
    return guardedLookup(this.trustedHosts.has(bareHost(new URL(baseUrl).hostname)));
  }

  /**
   * Sends one attempt through undici's dispatch API (no Readable streams, no promise per chunk).
   * `answer` (the caller's handle: abort() before or after the headers) tells its waiter at the
   * response headers, or of a connect error or no headers within `firstByteTimeoutMs` (the fallback
   * conditions). The body then flows to the sink given to stream().
   */
  send(target: UpstreamTarget, req: UpstreamRequest, firstByteTimeoutMs: number, answer: UpstreamAnswer): void {
    const undici = this.undici;
    // Only until undici is loaded (src/http/undici.ts): the calls after it take no extra tick.
    if (undici === null) {
      loadUndici().then(
        (u) => {
          this.undici = u;
          this.send(target, req, firstByteTimeoutMs, answer);
        },
        (err: Error) => answer.onResponseError(null, err),
      );
      return;
    }
    const { pool, basePath } = this.poolFor(undici, target.baseUrl);
    try {
      // The answer is undici's handler itself: no handler object and closures per call.
      pool.dispatch(
        {
          method: req.method as Dispatcher.HttpMethod,
          path: basePath + req.path,
          headers: req.headers,
          body: req.body,
          headersTimeout: firstByteTimeoutMs,
          bodyTimeout: UPSTREAM_BODY_TIMEOUT_MS,
        },
        answer,
      );
    } catch (err) {
      answer.onResponseError(null, err as Error);
    }
  }

  async close(): Promise<void> {
    const all = [...this.pools.values()];
    this.pools.clear();
    await Promise.allSettled(all.map((p) => p.pool.close()));
  }
}

/** Where an upstream body goes: data() returns false to pause the upstream until resume(). */
export interface BodySink {
  data(chunk: Buffer): boolean;
  end(err: Error | null): void;
}

/** Who waits for an upstream answer's start: told once, of the answer at its headers or of the error before them. */
export interface AnswerWaiter {
  answered(answer: UpstreamAnswer): void;
  failed(err: Error): void;
}

/**
 * One upstream answer: status and headers, then the body pushed to a sink as it arrives (chunks
 * that came before stream() was called are kept and delivered first). abort() cancels the request.
 * It is the dispatch handler of its request (GatewayUpstreams.send), so its on* methods are undici's.
 */
export class UpstreamAnswer implements Dispatcher.DispatchHandler {
  statusCode = 0;
  headers: IncomingHttpHeaders = {};
  controller: Dispatcher.DispatchController | null = null;
  abortRequested = false;
  /** Told once, at the response headers or the error before them (then null). */
  private waiter: AnswerWaiter | null;
  private sink: BodySink | null = null;
  private early: Buffer[] | null = null;
  private ended: { err: Error | null } | null = null;

  constructor(waiter: AnswerWaiter) {
    this.waiter = waiter;
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.controller = controller;
    if (this.abortRequested) controller.abort(new Error("aborted by the client"));
  }

  onResponseStart(_controller: Dispatcher.DispatchController, statusCode: number, headers: IncomingHttpHeaders): void {
    this.statusCode = statusCode;
    this.headers = headers;
    const waiter = this.waiter;
    this.waiter = null;
    waiter?.answered(this);
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (!this.sink) {
      if (this.early) this.early.push(chunk);
      else this.early = [chunk];
      return;
    }
    if (!this.sink.data(chunk)) controller.pause();
  }

  onResponseEnd(): void {
    this.finish(null);
  }

  onResponseError(_controller: Dispatcher.DispatchController | null, err: Error): void {
    if (this.statusCode === 0) {
      const waiter = this.waiter;
      this.waiter = null;
      waiter?.failed(err);
    } else this.finish(err);
  }

  private finish(err: Error | null): void {
    if (this.ended) return;
    this.ended = { err };
    this.sink?.end(err);
  }

  stream(sink: BodySink): void {
    this.sink = sink;
    const early = this.early;
    this.early = null;
    let paused = false;
    if (early) for (const c of early) if (!sink.data(c)) paused = true;
    if (paused) this.controller?.pause();
    if (this.ended) sink.end(this.ended.err);
  }

  resume(): void {
    this.controller?.resume();
  }

  abort(): void {
    this.abortRequested = true;
    if (!this.ended) this.controller?.abort(new Error("aborted by the client"));
  }

  /** Reads and discards the body (a failed attempt's answer), freeing the connection; `done` once it ended. */
  dump(done: () => void): void {
    this.stream({ data: () => true, end: () => done() });
  }
}
