import { randomUUID } from "node:crypto";
import { createServer, type IncomingMessage, type RequestListener, type ServerOptions, type ServerResponse, STATUS_CODES } from "node:http";
import type { Duplex } from "node:stream";
import type { WebSocket, WebSocketServer } from "ws";
import { MODALITIES } from "../config/schema.js";
import { errorAnswer, errorBody } from "../http/errors.js";
import { applyServerLimits, serverOptions, withBodyRate } from "../http/server-limits.js";
import { admitCaller } from "./admit.js";
import { answerError, answerHeaders, NodeOutbound, readIncoming } from "./exchange.js";
import type { Gateway } from "./gateway.js";
import { proxyCall } from "./pipeline.js";
import type { GatewayRoute, InboundRequest, LocalRoute, RoutableView, VendorProtocol } from "./protocol.js";
import { cartesiaBytesRoute, cartesiaProtocol, cartesiaWs } from "./protocols/cartesia.js";
import { PROTOCOLS } from "./protocols/index.js";
import { routableModels } from "./resolve.js";
import { WS_PROTOCOLS } from "./ws/protocols.js";
import type { WsProtocol, WsRoute } from "./ws/ws-route.js";

/** What one gateway path serves: an HTTP route (proxied or answered here) or a WebSocket route. */
export type Served =
  | { kind: "http"; protocol: VendorProtocol; route: GatewayRoute }
  /** `routes`: those sharing the path (OpenAI's /realtime), told apart by their accepts(). */
  | { kind: "ws"; protocol: VendorProtocol; wsp: WsProtocol; routes: readonly WsRoute[] };

/** A request the gateway owns, as its path table reads it. */
export interface GatewayMatch {
  protocol: VendorProtocol;
  /** Null: the path is under the vendor's prefix but names no route (the vendor-shaped 404). */
  served: Served | null;
  /** Route parameters (project and session of the attribution prefix, voice_id, …), percent-decoded. */
  params: Record<string, string>;
  /** Why the URL policy refuses the path (answered 400 in the vendor's shape); null when it passes. */
  refused: string | null;
  path: string;
  /** The raw query string, without "?". */
  query: string;
}

interface Pattern {
  method: string;
  /** The route's path as declared. */
  source: string;
  re: RegExp;
  names: string[];
  served: Served;
}

/** One vendor prefix's routes: exact paths in a Map ("POST /chat/completions"), parameter routes as patterns. */
interface PrefixRoutes {
  prefix: string;
  protocol: VendorProtocol;
  exact: Map<string, Served>;
  patterns: Pattern[];
}

const POLICY = "a gateway path may not hold a dot segment, a backslash or malformed percent-encoding (literal or encoded)";

/**
 * The gateway's paths: every protocol's prefix (also behind /p/{project}/s/{session}) and Cartesia's
 * root routes, with the routes under each. The URL policy (docs/api/gateway.md, "Paths"):
 * - a path is the gateway's when it is a vendor prefix or starts with one and "/" (or is that behind
 *   the attribution prefix, whose two values are non-empty segments), or is one of Cartesia's root
 *   routes exactly; anything else is not (Voxgate's own API and web app);
 * - the request target must be a path ("/…"); the Host header plays no part;
 * - a gateway path is matched as sent, never normalised: a dot segment, a backslash or malformed
 *   percent-encoding anywhere in it (literally or percent-encoded) is refused 400 in the vendor's
 *   error shape, so no path can mean one route to the gateway and another to whoever reads it next;
 * - static parts match literally (no percent-decoding, no trailing slash); parameter values are
 *   percent-decoded; a path under a prefix that names no route (or another method) is a 404 in
 *   the vendor's shape.
 */
export class GatewayPaths {
  private readonly prefixes: PrefixRoutes[] = [];
  private readonly root = new Map<string, Served>();

  constructor(protocols: readonly VendorProtocol[] = PROTOCOLS, wsProtocols: readonly WsProtocol[] = WS_PROTOCOLS) {
    const routesOf = (protocol: VendorProtocol): PrefixRoutes => {
      let p = this.prefixes.find((x) => x.protocol === protocol);
      if (p) return p;
      p = { prefix: protocol.prefix, protocol, exact: new Map(), patterns: [] };
      this.prefixes.push(p);
      return p;
    };
    // WebSocket routes first: a GET on a path both have is the WebSocket's (Deepgram's /listen, /speak).
    for (const wsp of wsProtocols) {
      for (const route of wsp.routes) {
        const routes = wsp.routes.filter((r) => r.path === route.path);
        if (routes[0] !== route) continue;
        const served: Served = { kind: "ws", protocol: wsp.protocol, wsp, routes };
        add(routesOf(wsp.protocol), "GET", route.path, served);
        if (wsp === cartesiaWs) this.root.set(`GET ${route.path}`, served);
      }
    }
    for (const protocol of protocols) {
      const p = routesOf(protocol);
      for (const route of protocol.routes) add(p, route.method, route.path, { kind: "http", protocol, route });
    }
    // Cartesia's clients drop a base URL's path: its /tts/bytes is also served at the root (attributed by headers only).
    this.root.set(`POST ${cartesiaBytesRoute.path}`, { kind: "http", protocol: cartesiaProtocol, route: cartesiaBytesRoute });
  }

  /** Every route as method and path in Hono's syntax (":voice_id"), behind the attribution prefix too: for tests and documents. */
  list(): { method: string; path: string; served: Served }[] {
    const out: { method: string; path: string; served: Served }[] = [];
    const entries = (p: PrefixRoutes) => [...[...p.exact].map(([key, served]) => ({ key, served })), ...p.patterns.map((x) => ({ key: `${x.method} ${x.source}`, served: x.served }))];
    for (const p of this.prefixes) {
      for (const { key, served } of entries(p)) {
        const [method = "", path = ""] = key.split(" ");
        out.push({ method, path: `${p.prefix}${path}`, served }, { method, path: `/p/:project/s/:session${p.prefix}${path}`, served });
      }
    }
    for (const [key, served] of this.root) {
      const [method = "", path = ""] = key.split(" ");
      out.push({ method, path, served });
    }
    return out;
  }

  /** The gateway's reading of a request, or null when the request is not the gateway's. */
  match(method: string, url: string): GatewayMatch | null {
    if (url.charCodeAt(0) !== 47) return null;
    const q = url.indexOf("?");
    const path = q < 0 ? url : url.slice(0, q);
    const query = q < 0 ? "" : url.slice(q + 1);
    const m = method === "HEAD" ? "GET" : method;
    let rest = path;
    let params: Record<string, string> = {};
    if (path.startsWith("/p/")) {
      const s1 = path.indexOf("/", 3);
      if (s1 <= 3 || !path.startsWith("/s/", s1)) return null;
      const s2 = path.indexOf("/", s1 + 3);
      if (s2 <= s1 + 3) return null;
      params = { project: path.slice(3, s1), session: path.slice(s1 + 3, s2) };
      rest = path.slice(s2);
    }
    const p = this.prefixOf(rest);
    if (!p) {
      if (rest !== path) return null;
      const served = this.root.get(`${m} ${path}`);
      return served ? { protocol: served.protocol, served, params, refused: null, path, query } : null;
    }
    const refused = policyRefusal(path);
    if (refused) return { protocol: p.protocol, served: null, params, refused, path, query };
    const sub = rest.slice(p.prefix.length);
    let served = p.exact.get(`${m} ${sub}`) ?? null;
    if (!served) {
      for (const pattern of p.patterns) {
        if (pattern.method !== m) continue;
        const found = pattern.re.exec(sub);
        if (!found) continue;
        params = { ...params };
        for (let i = 0; i < pattern.names.length; i++) params[pattern.names[i] as string] = found[i + 1] as string;
        served = pattern.served;
        break;
      }
    }
    // Checked by policyRefusal: every %-sequence decodes.
    if (path.includes("%")) for (const k in params) params[k] = decodeURIComponent(params[k] as string);
    return { protocol: p.protocol, served, params, refused: null, path, query };
  }

  private prefixOf(path: string): PrefixRoutes | null {
    for (const p of this.prefixes) {
      if (path.startsWith(p.prefix) && (path.length === p.prefix.length || path.charCodeAt(p.prefix.length) === 47)) return p;
    }
    return null;
  }
}

/** Registers a route path in Hono's syntax ("/text-to-speech/:voice_id/stream"): exact, or a pattern when it has parameters. */
function add(p: PrefixRoutes, method: string, path: string, served: Served): void {
  const names: string[] = [];
  const source = path.replace(/[.*+?^${}()|[\]\\]/g, "\\$&").replace(/:([A-Za-z0-9_]+)/g, (_m, name: string) => {
    names.push(name);
    return "([^/]+)";
  });
  if (names.length === 0) {
    const key = `${method} ${path}`;
    if (!p.exact.has(key)) p.exact.set(key, served);
  } else p.patterns.push({ method, source: path, re: new RegExp(`^${source}$`), names, served });
}

/** Why the URL policy refuses a gateway path (see GatewayPaths), or null. */
export function policyRefusal(path: string): string | null {
  if (!path.includes("%") && !path.includes("\\") && !path.includes("/.")) return null;
  for (const segment of path.split("/")) {
    let s = segment;
    if (s.includes("%")) {
      try {
        s = decodeURIComponent(s);
      } catch {
        return POLICY;
      }
    }
    if (s.includes("\\")) return POLICY;
    // An encoded "/" is a parameter's own character (a Gemini model id), but "%2E%2E%2F" is still a dot segment.
    for (const part of s.split("/")) if (part === "." || part === "..") return POLICY;
  }
  return null;
}

/**
 * The gateway's one entry for HTTP requests: a node request listener that serves every request the
 * gateway's paths own (proxied calls, the routes it answers itself, the vendor-shaped 400 and 404,
 * the 426 of a plain request on a WebSocket route) from node's request and response, and hands
 * everything else to `next` (node-server's listener for the Hono app: Voxgate's own API and web app).
 */
export function gatewayListener(gw: Gateway, next: RequestListener, paths: GatewayPaths = new GatewayPaths()): RequestListener {
  return (req: IncomingMessage, res: ServerResponse) => {
    const m = paths.match(req.method ?? "GET", req.url ?? "/");
    if (!m) {
      next(req, res);
      return;
    }
    const thrown = (err: unknown) => answerThrown(gw, res, err);
    try {
      serve(gw, m, req, res, thrown)?.catch(thrown);
    } catch (err) {
      thrown(err);
    }
  };
}

let wsPipeline: Promise<typeof import("./ws/pipeline.js")> | null = null;

/**
 * The WebSocket relay (src/gateway/ws/pipeline.ts, its sessions, budgets and failover legs), imported
 * on the first upgrade: a server answers /health without it (docs/perf/startup.md). The server warms
 * it once it listens (src/server.ts), so the first stream does not wait for it.
 */
export function loadWsPipeline(): Promise<typeof import("./ws/pipeline.js")> {
  wsPipeline ??= import("./ws/pipeline.js");
  return wsPipeline;
}

/**
 * The gateway's one entry for WebSocket upgrades (the server's 'upgrade' event: every upgrade is the
 * gateway's, the Hono app has no WebSocket route): a WebSocket route's upgrade goes to the relay
 * (src/gateway/ws/pipeline.ts), which completes it on `sockets` or refuses it; any other is refused
 * with a status line and no body (404 not a WebSocket route, 400 the URL policy or not a WebSocket).
 */
export function gatewayUpgrades(gw: Gateway, sockets: WebSocketServer, paths: GatewayPaths = new GatewayPaths()) {
  return (req: IncomingMessage, socket: Duplex, head: Buffer): void => {
    // A client that resets its connection before the handshake completes must not crash the process.
    const ignore = () => {};
    socket.on("error", ignore);
    const m = paths.match(req.method ?? "GET", req.url ?? "/");
    const served = m?.served?.kind === "ws" ? m.served : null;
    if (!m || m.refused || !served || req.headers.upgrade?.toLowerCase() !== "websocket") {
      const status = m?.refused || (served && req.headers.upgrade?.toLowerCase() !== "websocket") ? 400 : 404;
      rejectUpgrade(socket, status, m ? { "x-voxgate-error": "invalid_request" } : {});
      return;
    }
    const query = new URLSearchParams(m.query);
    // Routes sharing a path (OpenAI's /realtime: transcription or conversation) are told apart by accepts().
    const route = served.routes.find((r) => r.accepts?.(query) ?? true) ?? (served.routes[0] as WsRoute);
    const upgrade = {
      req,
      params: m.params,
      query,
      accept(headers: Record<string, string>, onOpen: (client: WebSocket) => void) {
        if (socket.destroyed) return;
        const add = (lines: string[]) => appendHeaders(lines, headers);
        sockets.on("headers", add);
        try {
          sockets.handleUpgrade(req, socket, head, (client) => {
            socket.off("error", ignore);
            onOpen(client);
          });
        } finally {
          sockets.off("headers", add);
        }
      },
      reject: (status: number, headers: Record<string, string>) => rejectUpgrade(socket, status, headers),
    };
    loadWsPipeline()
      .then(({ handleWebSocket }) => handleWebSocket(gw, served.wsp, route, upgrade))
      .catch((err: unknown) => {
        gw.log.error({ err: (err as Error).message, path: m.path }, "gateway WebSocket upgrade failed");
        rejectUpgrade(socket, 500, {});
      });
  };
}

/** Headers a refused or accepted upgrade never takes from the relay (the handshake's own, or the connection's). */
const UPGRADE_OWN = new Set(["connection", "content-length", "keep-alive", "proxy-authenticate", "proxy-authorization", "te", "trailer", "transfer-encoding", "upgrade", "sec-websocket-accept", "sec-websocket-extensions", "sec-websocket-protocol"]);

function appendHeaders(lines: string[], headers: Record<string, string>): void {
  for (const name in headers) {
    const v = headers[name] as string;
    if (!UPGRADE_OWN.has(name.toLowerCase()) && !/[\r\n]/.test(v)) lines.push(`${name}: ${v}`);
  }
}

/** A refused upgrade: the status line and headers, no body (what a WebSocket client reports as the handshake's status), connection closed. */
function rejectUpgrade(socket: Duplex, status: number, headers: Record<string, string>): void {
  if (socket.destroyed) return;
  const lines = ["Connection: close", "Content-Length: 0"];
  appendHeaders(lines, headers);
  socket.end(`HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ""}\r\n${lines.join("\r\n")}\r\n\r\n`);
}

/**
 * node's createServer with the gateway's entries: its request listener in front of the one
 * node-server builds for the Hono app, its upgrade listener completing upgrades on `sockets` (closed
 * with the server), and the server's timeouts and minimum body rate:
 * `serve({ fetch: app.fetch, createServer: withGatewayListener(gateway, sockets), … })`.
 */
export function withGatewayListener(gw: Gateway, sockets: WebSocketServer): typeof createServer {
  const limits = gw.config.serve;
  const paths = new GatewayPaths();
  const create = (options: ServerOptions, listener: RequestListener) => {
    // The server's header/request timeouts and minimum body rate apply to every request (src/http/server-limits.ts).
    const server = createServer({ ...options, ...serverOptions(limits) }, withBodyRate(gatewayListener(gw, listener, paths), limits));
    applyServerLimits(server, limits);
    server.on("upgrade", gatewayUpgrades(gw, sockets, paths));
    server.on("close", () => sockets.close());
    return server;
  };
  return create as typeof createServer;
}

/** Answers a gateway request; a promise only while a step waits on one (`thrown`: an error of a later step). */
function serve(gw: Gateway, m: GatewayMatch, req: IncomingMessage, res: ServerResponse, thrown: (err: unknown) => void): Promise<void> | undefined {
  const { protocol, served } = m;
  const out = new NodeOutbound(res, req);
  if (m.refused) {
    answerError(out, protocol, 400, "invalid_request", m.refused, randomUUID());
  } else if (!served) {
    answerError(out, protocol, 404, "invalid_request", `no route ${req.method} ${m.path}`, randomUUID());
  } else if (served.kind === "ws") {
    // A WebSocket route asked without an upgrade (upgrades arrive as the server's 'upgrade' event).
    const body = JSON.stringify(errorBody("upgrade_required", `${m.path} is a WebSocket route: connect with Upgrade: websocket`));
    res.writeHead(426, { upgrade: "websocket", "content-type": "application/json", "content-length": Buffer.byteLength(body) });
    res.end(body);
  } else if (served.route.kind === "proxy") {
    const inbound = { method: req.method ?? "POST", params: m.params, headers: req.headers, query: m.query, readBody: (limit: number) => readIncoming(req, limit) };
    return proxyCall(gw, protocol, served.route, inbound, out, thrown);
  } else return answerLocal(gw, protocol, served.route, m, req, out);
  return undefined;
}

/** A route the gateway answers itself: the same loopback, key and scope rules as a proxied call. */
async function answerLocal(gw: Gateway, protocol: VendorProtocol, route: LocalRoute, m: GatewayMatch, req: IncomingMessage, out: NodeOutbound): Promise<void> {
  const requestId = randomUUID();
  const { headers } = req;
  const query = new URLSearchParams(m.query);
  const caller = await admitCaller(gw, protocol, { headers, query, params: m.params, remoteAddress: out.remoteAddress });
  if (!caller.ok) {
    answerError(out, protocol, caller.status, caller.code, caller.message, requestId);
    return;
  }
  const table = gw.table;
  const routable: RoutableView = {
    models: MODALITIES.flatMap((modality) => routableModels(table, { modality, providerTypes: protocol.providerTypes })),
    stacks: table.stacks,
  };
  const inbound: InboundRequest = { method: req.method ?? "GET", path: route.path, params: m.params, query, headers, body: Buffer.alloc(0) };
  const a = route.answer({ inbound, routable });
  const body = typeof a.body === "string" ? Buffer.from(a.body) : a.body;
  out.head(a.status, answerHeaders({ ...a.headers, "content-length": String(body.byteLength) }, {}, requestId));
  out.write(body);
  out.end();
}

/** An error thrown by a call: a 500 without internals (logged), as the Hono app's onError answers. */
function answerThrown(gw: Pick<Gateway, "log">, res: ServerResponse, thrown: unknown): void {
  const err = thrown instanceof Error ? thrown : new Error(String(thrown));
  const a = errorAnswer(err, gw.log);
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const body = JSON.stringify(a.body);
  res.writeHead(a.status, { ...a.headers, "content-type": "application/json", "content-length": Buffer.byteLength(body) });
  res.end(body);
}
