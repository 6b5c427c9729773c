import { createServer, type IncomingHttpHeaders, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/** One request as a stub vendor saw it. */
export interface StubHit {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
}

/** What the stub does with one request; unset fields take the vendor's normal answer. */
export interface StubStep {
  /** Answer this status with the vendor's error body (429, 500, 503…). */
  status?: number;
  /** Wait this long before the response headers. */
  delayMs?: number;
  /** Retry-After header value. */
  retryAfter?: string;
  /** Never answer (the first-byte timeout path). */
  hang?: boolean;
  /** Close the connection without an answer (a connect-level failure). */
  reset?: boolean;
  /** Streams: cut the connection after this many events. */
  dropAfterEvents?: number;
  /** Streams: wait this long between events. */
  eventGapMs?: number;
}

export type StubHandler = (req: IncomingMessage, res: ServerResponse, hit: StubHit, step: StubStep) => void | Promise<void>;

/**
 * A real loopback HTTP server standing in for a vendor: records every hit (headers and body) and
 * follows a script of steps, one per request (then `fallback`, the normal answer). Used by the
 * gateway tests and bench:gateway.
 */
export class StubServer {
  readonly hits: StubHit[] = [];
  /**
   * Whether hits are kept. bench:gateway's stub answers millions of requests in one run: kept hits
   * grow its heap, and its old-generation GC (CPU on the cores the peers share) grows with them.
   */
  keepHits = true;
  /** Answers the client (the gateway) cut off before they ended: an aborted upstream. */
  abortedAnswers = 0;
  private steps: StubStep[] = [];
  fallback: StubStep = {};
  private server: Server | null = null;
  port = 0;

  constructor(private readonly handler: StubHandler) {}

  /** Queues steps for the next requests, in order. */
  script(...steps: StubStep[]): this {
    this.steps.push(...steps);
    return this;
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  async start(port = 0): Promise<this> {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        const hit: StubHit = { method: req.method ?? "", path: req.url ?? "", headers: req.headers, body: Buffer.concat(chunks).toString("utf8") };
        if (this.keepHits) this.hits.push(hit);
        res.once("close", () => {
          if (!res.writableFinished) this.abortedAnswers++;
        });
        const step = this.steps.shift() ?? this.fallback;
        if (step.reset) return void req.socket.destroy();
        if (step.hang) return;
        const go = () => void Promise.resolve(this.handler(req, res, hit, step)).catch(() => res.destroy());
        if (step.delayMs) setTimeout(go, step.delayMs);
        else go();
      });
    });
    this.server.keepAliveTimeout = 60_000;
    await new Promise<void>((r) => this.server?.listen(port, "127.0.0.1", () => r()));
    this.port = (this.server.address() as AddressInfo).port;
    return this;
  }

  async close(): Promise<void> {
    const s = this.server;
    if (!s) return;
    s.closeAllConnections();
    await new Promise<void>((r) => s.close(() => r()));
  }
}

/** Writes SSE events with the step's gap and drop rules; resolves when done or dropped. */
export async function writeEvents(res: ServerResponse, events: string[], step: StubStep): Promise<void> {
  for (let i = 0; i < events.length; i++) {
    if (step.dropAfterEvents !== undefined && i >= step.dropAfterEvents) {
      // Let what was written reach the socket first: the drop is mid-stream, not before the headers.
      await new Promise((r) => setTimeout(r, 30));
      res.destroy();
      return;
    }
    if (step.eventGapMs && i > 0) await new Promise((r) => setTimeout(r, step.eventGapMs));
    if (res.destroyed) return;
    res.write(events[i]);
  }
  res.end();
}
