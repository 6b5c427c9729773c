import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { Duplex } from "node:stream";
import { WebSocket, WebSocketServer } from "ws";

/**
 * A scriptable loopback vendor: the outside world of the gateway tests. Plain node:http + ws so the
 * stub controls every byte (mid-stream drops, handshake refusals, close codes). Vendor modules
 * (deepgram.ts, elevenlabs.ts, cartesia.ts, openai-audio.ts) register their routes on it.
 */
export interface StubScript {
  /** Milliseconds before the first byte of an answer (HTTP headers, or a WebSocket's first server frame). */
  delayMs: number;
  /** Statuses answered one per request/handshake, in order, before the vendor logic (then normal service). */
  statuses: number[];
  /** Retry-After sent with a scripted non-2xx status. */
  retryAfter: string | null;
  /** HTTP: destroy the socket after this many body bytes. WS: terminate after this many server frames. */
  dropAfter: number | null;
  /** WS: close with this code (and reason) after `closeAfterFrames` server frames. */
  close: { code: number; reason: string; afterFrames: number } | null;
}

export interface SeenRequest {
  method: string;
  path: string;
  query: URLSearchParams;
  headers: Record<string, string>;
  body: Uint8Array;
  websocket: boolean;
  /** WebSocket client frames (text as string, binary as bytes). */
  frames: Array<string | Uint8Array>;
}

export interface HttpContext {
  req: SeenRequest;
  res: ServerResponse;
  params: Record<string, string>;
  /** Writes a status + headers after the scripted delay, then body chunks honouring dropAfter. */
  answer(status: number, headers: Record<string, string>, chunks: Array<string | Uint8Array>): Promise<void>;
}

export interface WsContext {
  req: SeenRequest;
  params: Record<string, string>;
  /** Sends one server frame after the scripted delay (first frame) and applies drop/close scripts. */
  send(data: string | Uint8Array): Promise<void>;
  close(code?: number, reason?: string): void;
  onMessage(handler: (data: string | Uint8Array, isBinary: boolean) => void): void;
  onClose(handler: (code: number) => void): void;
  socket: WebSocket;
}

type Route<C> = { method: string; pattern: RegExp; keys: string[]; handler: (ctx: C) => void | Promise<void> };

function compile(path: string): { pattern: RegExp; keys: string[] } {
  const keys: string[] = [];
  const src = path.replace(/:([a-z_]+)/gi, (_m, k: string) => {
    keys.push(k);
    return "([^/]+)";
  });
  return { pattern: new RegExp(`^${src}$`), keys };
}

function match<C>(routes: Route<C>[], method: string, path: string): { route: Route<C>; params: Record<string, string> } | null {
  for (const route of routes) {
    if (route.method !== "*" && route.method !== method) continue;
    const m = route.pattern.exec(path);
    if (!m) continue;
    const params: Record<string, string> = {};
    route.keys.forEach((k, i) => {
      params[k] = decodeURIComponent(m[i + 1] ?? "");
    });
    return { route, params };
  }
  return null;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function flatHeaders(req: IncomingMessage): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(req.headers)) if (v !== undefined) out[k] = Array.isArray(v) ? v.join(", ") : v;
  return out;
}

/** What the stub vendor itself measured for one request: the truth the gateway's units are checked against. */
export interface StubTruth {
  path: string;
  audioSeconds?: number;
  characters?: number;
  /** The audio the stub sent (TTS), so tests can hash what the client got. */
  audioOut?: Uint8Array;
  /** The audio the stub received (STT uploads), so tests can hash what the client sent. */
  audioIn?: Uint8Array;
}

export const defaultScript = (): StubScript => ({ delayMs: 0, statuses: [], retryAfter: null, dropAfter: null, close: null });

export class StubServer {
  readonly seen: SeenRequest[] = [];
  /** Per request/stream, what the vendor measured (vendor modules fill it). */
  readonly truth: StubTruth[] = [];
  script: StubScript = defaultScript();
  /** Open stub-side sockets, so a test can see the upstream was closed. */
  readonly openSockets = new Set<WebSocket>();
  private readonly httpRoutes: Route<HttpContext>[] = [];
  private readonly wsRoutes: Route<WsContext>[] = [];
  private readonly server: Server;
  private readonly wss = new WebSocketServer({ noServer: true });
  private port = 0;

  constructor() {
    this.server = createServer((req, res) => void this.onRequest(req, res));
    this.server.on("upgrade", (req, socket, head) => this.onUpgrade(req, socket, head));
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }
  get wsUrl(): string {
    return `ws://127.0.0.1:${this.port}`;
  }

  http(method: string, path: string, handler: (ctx: HttpContext) => void | Promise<void>): this {
    this.httpRoutes.push({ method, ...compile(path), handler });
    return this;
  }
  ws(path: string, handler: (ctx: WsContext) => void | Promise<void>): this {
    this.wsRoutes.push({ method: "*", ...compile(path), handler });
    return this;
  }

  /** Resets the script and the log of seen requests. */
  reset(script: Partial<StubScript> = {}): void {
    this.seen.length = 0;
    this.truth.length = 0;
    this.script = { ...defaultScript(), ...script };
  }

  async start(): Promise<this> {
    await new Promise<void>((resolve) => this.server.listen(0, "127.0.0.1", resolve));
    this.port = (this.server.address() as AddressInfo).port;
    return this;
  }

  async stop(): Promise<void> {
    for (const s of this.openSockets) s.terminate();
    this.server.closeAllConnections();
    await new Promise<void>((r) => this.server.close(() => r()));
  }

  private nextScriptedStatus(): number | null {
    return this.script.statuses.shift() ?? null;
  }

  private async onRequest(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const url = new URL(req.url ?? "/", "http://stub");
    const seen: SeenRequest = {
      method: req.method ?? "GET",
      path: url.pathname,
      query: url.searchParams,
      headers: flatHeaders(req),
      body: new Uint8Array(Buffer.concat(chunks)),
      websocket: false,
      frames: [],
    };
    this.seen.push(seen);
    const scripted = this.nextScriptedStatus();
    if (scripted !== null && scripted >= 300) {
      await sleep(this.script.delayMs);
      const headers: Record<string, string> = { "content-type": "application/json" };
      if (this.script.retryAfter !== null) headers["retry-after"] = this.script.retryAfter;
      res.writeHead(scripted, headers).end(JSON.stringify({ error: { message: `scripted ${scripted}` } }));
      return;
    }
    const found = match(this.httpRoutes, seen.method, seen.path);
    if (!found) {
      res.writeHead(404, { "content-type": "application/json" }).end(JSON.stringify({ error: "stub: no route" }));
      return;
    }
    const script = this.script;
    const answer = async (status: number, headers: Record<string, string>, body: Array<string | Uint8Array>) => {
      await sleep(script.delayMs);
      res.writeHead(status, headers);
      res.flushHeaders();
      let sent = 0;
      for (const chunk of body) {
        const bytes = typeof chunk === "string" ? Buffer.from(chunk) : chunk;
        if (script.dropAfter !== null && sent + bytes.length > script.dropAfter) {
          res.write(bytes.subarray(0, Math.max(0, script.dropAfter - sent)));
          await sleep(5);
          res.socket?.destroy();
          return;
        }
        res.write(bytes);
        sent += bytes.length;
        // Let each chunk leave as its own write, the way a vendor streams audio.
        await new Promise((r) => setImmediate(r));
      }
      res.end();
    };
    await found.route.handler({ req: seen, res, params: found.params, answer });
  }

  private onUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    const url = new URL(req.url ?? "/", "http://stub");
    const seen: SeenRequest = {
      method: "GET",
      path: url.pathname,
      query: url.searchParams,
      headers: flatHeaders(req),
      body: new Uint8Array(0),
      websocket: true,
      frames: [],
    };
    this.seen.push(seen);
    const found = match(this.wsRoutes, "*", url.pathname);
    const scripted = this.nextScriptedStatus();
    const refuse = found ? scripted : 404;
    if (refuse !== null && refuse >= 300) {
      const retry = this.script.retryAfter !== null ? `Retry-After: ${this.script.retryAfter}\r\n` : "";
      socket.end(`HTTP/1.1 ${refuse} Refused\r\nConnection: close\r\nContent-Length: 0\r\n${retry}\r\n`);
      return;
    }
    if (!found) return;
    this.wss.handleUpgrade(req, socket, head, (ws) => {
      this.openSockets.add(ws);
      const script = this.script;
      let framesOut = 0;
      let first = true;
      let queue: Promise<void> = Promise.resolve();
      const closeHandlers: Array<(code: number) => void> = [];
      ws.on("close", (code) => {
        this.openSockets.delete(ws);
        for (const h of closeHandlers) h(code);
      });
      ws.on("error", () => {});
      const ctx: WsContext = {
        req: seen,
        params: found.params,
        socket: ws,
        // Frames leave in order; the scripted delay holds the first one (and so all that follow it).
        send(data) {
          queue = queue.then(async () => {
            if (first) {
              first = false;
              if (script.delayMs > 0) await sleep(script.delayMs);
            }
            if (ws.readyState !== WebSocket.OPEN) return;
            ws.send(data);
            framesOut++;
            if (script.dropAfter !== null && framesOut >= script.dropAfter) ws.terminate();
            else if (script.close && framesOut >= script.close.afterFrames) ws.close(script.close.code, script.close.reason);
          });
          return queue;
        },
        close(code, reason) {
          if (ws.readyState === WebSocket.OPEN) ws.close(code, reason);
        },
        onMessage(handler) {
          ws.on("message", (data, isBinary) => {
            const frame = isBinary ? new Uint8Array(data as Buffer) : (data as Buffer).toString("utf8");
            seen.frames.push(frame);
            handler(frame, isBinary);
          });
        },
        onClose(handler) {
          closeHandlers.push(handler);
        },
      };
      void found.route.handler(ctx);
    });
  }
}

/** The provider key a stub saw on a request, wherever the vendor's SDK puts it. */
export function presentedKeys(req: SeenRequest): string[] {
  const h = req.headers;
  const out: string[] = [];
  for (const name of ["authorization", "x-api-key", "xi-api-key", "api-key", "sec-websocket-protocol"]) {
    const v = h[name];
    if (v) out.push(v);
  }
  for (const name of ["api_key", "token", "xi-api-key", "authorization"]) {
    const v = req.query.get(name);
    if (v) out.push(v);
  }
  return out;
}
