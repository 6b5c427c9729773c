import { createServer, type IncomingMessage, type RequestListener, type ServerOptions, type ServerResponse } from "node:http";
import { errorAnswer } from "../http/errors.js";
import { applyServerLimits, serverOptions, withBodyRate } from "../http/server-limits.js";
import type { Gateway } from "./gateway.js";
import { NodeOutbound, readIncoming } from "./exchange.js";
import { proxyCall } from "./pipeline.js";
import type { ProxyRoute, VendorProtocol } from "./protocol.js";
import { cartesiaBytesRoute, cartesiaProtocol } from "./protocols/cartesia.js";
import { PROTOCOLS } from "./protocols/index.js";

/** A proxied route the fast listener serves: POST on a path without parameters. */
interface FastRoute {
  protocol: VendorProtocol;
  route: ProxyRoute;
}

/**
 * The request URL node-server hands to Hono unchanged (its own test, @hono/node-server's
 * reValidRequestUrl): no "%" (nothing for Hono to decode), no backslash, no dot segment. Anything else
 * goes through Hono, which normalises it.
 */
const PLAIN_PATH = /^\/[A-Za-z0-9._~!$&'()*+,;=:@/-]*$/;
/** A Host header node-server takes as is (its reValidHost); others are checked (and maybe refused) by it. */
const PLAIN_HOST = /^[a-z0-9._-]+(?::(?:[1-5]\d{3,4}|[6-9]\d{3}))?$/;
/** A value of the /p/{project}/s/{session} prefix as Hono's `:param` matches it, minus dot segments. */
const isSegment = (s: string) => s.length > 0 && s !== "." && s !== "..";

/**
 * The gateway's fast listener: a node `request` listener in front of the Hono app that serves the
 * parameter-less proxied routes (POST /openai/v1/chat/completions, /anthropic/v1/messages, …, also
 * behind /p/{project}/s/{session}) straight from node's request, without building Hono's web
 * Request/Response objects, and hands every other request to `next` (node-server's Hono listener).
 *
 * The call itself is the pipeline's proxyCall, the same function the Hono route runs, given the same
 * method, params, headers, query and body: same auth, attribution, limits, budgets, fallbacks,
 * records, headers and error shapes (test/gateway/fast-path.test.ts compares the two). Only requests
 * whose URL and Host node-server would pass to Hono unchanged are taken, so routing cannot differ.
 */
export function gatewayFastListener(gw: Gateway, next: RequestListener, protocols: readonly VendorProtocol[] = PROTOCOLS): RequestListener {
  const routes = new Map<string, FastRoute>();
  for (const protocol of protocols) {
    for (const route of protocol.routes) {
      if (route.kind === "proxy" && route.method === "POST" && !route.path.includes(":")) routes.set(protocol.prefix + route.path, { protocol, route });
    }
  }
  // Cartesia's root /tts/bytes (its clients drop a base URL's path): headers-only attribution.
  const rootOnly = new Map<string, FastRoute>([[cartesiaBytesRoute.path, { protocol: cartesiaProtocol, route: cartesiaBytesRoute }]]);

  return (req: IncomingMessage, res: ServerResponse) => {
    const m = req.method === "POST" ? match(req, routes, rootOnly) : null;
    if (!m) {
      next(req, res);
      return;
    }
    const out = new NodeOutbound(res, req);
    const inbound = { method: "POST", params: m.params, headers: req.headers, query: m.query, readBody: (limit: number) => readIncoming(req, limit) };
    proxyCall(gw, m.fast.protocol, m.fast.route, inbound, out).catch((err: unknown) => answerThrown(gw, res, err));
  };
}

/**
 * node's createServer with the fast listener in front of the one node-server builds for the Hono app,
 * and the server's timeouts and minimum body rate:
 * `serve({ fetch: app.fetch, createServer: withGatewayFastPath(gateway), … })`.
 */
export function withGatewayFastPath(gw: Gateway): typeof createServer {
  const limits = gw.config.serve;
  const create = (options: ServerOptions, listener: RequestListener) => {
    // The server's header/request timeouts and minimum body rate apply to every request (src/http/server-limits.ts).
    const server = createServer({ ...options, ...serverOptions(limits) }, withBodyRate(gatewayFastListener(gw, listener), limits));
    applyServerLimits(server, limits);
    return server;
  };
  return create as typeof createServer;
}

function match(
  req: IncomingMessage,
  routes: ReadonlyMap<string, FastRoute>,
  rootOnly: ReadonlyMap<string, FastRoute>,
): { fast: FastRoute; params: Record<string, string>; query: string } | null {
  const url = req.url ?? "";
  const host = req.headers.host;
  if (host === undefined || !PLAIN_HOST.test(host)) return null;
  const q = url.indexOf("?");
  const path = q < 0 ? url : url.slice(0, q);
  if (!PLAIN_PATH.test(path)) return null;
  const query = q < 0 ? "" : url.slice(q + 1);
  const direct = routes.get(path) ?? rootOnly.get(path);
  if (direct) return { fast: direct, params: {}, query };
  // /p/{project}/s/{session}/<prefix><route>
  if (!path.startsWith("/p/")) return null;
  const s1 = path.indexOf("/", 3);
  if (s1 < 0 || !path.startsWith("/s/", s1)) return null;
  const s2 = path.indexOf("/", s1 + 3);
  if (s2 < 0) return null;
  const project = path.slice(3, s1);
  const session = path.slice(s1 + 3, s2);
  const fast = routes.get(path.slice(s2));
  if (!fast || !isSegment(project) || !isSegment(session)) return null;
  return { fast, params: { project, session }, query };
}

/** What the Hono app's onError would answer for an error thrown by the call (a 500 without internals). */
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
