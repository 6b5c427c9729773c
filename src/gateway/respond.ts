import type { IncomingHttpHeaders } from "node:http";
import type { Context } from "hono";
import { RESPONSE_ALREADY_SENT } from "@hono/node-server/utils/response";
import { API_SECURITY_HEADERS } from "../http/security-headers.js";
import { NodeOutbound, type Outbound, WebOutbound, type nodeBindings } from "./exchange.js";
import type { GatewayErrorCode, VendorProtocol } from "./protocol.js";

/** An Outbound that also yields what the Hono handler returns once the call is over. */
export type HandlerOutbound = Outbound & { done(_: unknown): Response | Promise<Response> };

/** The client side of a call: the node socket when served, a web Response in-process. */
export function openOutbound(_c: Context, node: ReturnType<typeof nodeBindings>): HandlerOutbound {
  if (node) {
    const o = new NodeOutbound(node.outgoing, node.incoming) as NodeOutbound & HandlerOutbound;
    o.done = () => RESPONSE_ALREADY_SENT;
    return o;
  }
  const o = new WebOutbound() as WebOutbound & HandlerOutbound;
  o.done = () => o.response;
  return o;
}

/** Upstream answer headers that are the connection's, not the answer's, or that must not reach the caller. */
const DROPPED_UPSTREAM = new Set(["connection", "keep-alive", "transfer-encoding", "set-cookie", "proxy-authenticate", "trailer", "upgrade"]);

export function passthroughHeaders(h: IncomingHttpHeaders): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const name in h) {
    const v = h[name];
    if (v === undefined || DROPPED_UPSTREAM.has(name)) continue;
    out[name] = v;
  }
  return out;
}

/** An answer's headers: the given ones, Voxgate's (request id, warnings) and the API security headers. */
export function answerHeaders(base: Record<string, string | string[]>, extra: Record<string, string>): Record<string, string | string[]> {
  // Assignment in a loop, not `{ ...base, ...extra, ...API_SECURITY_HEADERS }` (same keys, order and
  // precedence): spreading objects with per-call keys was the gateway's largest own cost per call.
  const out: Record<string, string | string[]> = {};
  for (const name in base) out[name] = base[name] as string | string[];
  for (const name in extra) out[name] = extra[name] as string;
  for (let i = 0; i < SECURITY_NAMES.length; i++) {
    const name = SECURITY_NAMES[i] as string;
    out[name] = API_SECURITY_HEADERS[name] as string;
  }
  return out;
}
const SECURITY_NAMES = Object.keys(API_SECURITY_HEADERS);

/** Sends a gateway error in the vendor's own error shape; the returned value is ignored. */
export function answerError(
  out: Outbound,
  protocol: VendorProtocol,
  status: number,
  code: GatewayErrorCode,
  message: string,
  requestId: string,
  extra: Record<string, string> = {},
  details?: unknown,
): undefined {
  const e = protocol.errorBody(status, code, message, details);
  const body = Buffer.from(e.body);
  out.head(status, answerHeaders({ "content-type": e.contentType, "content-length": String(body.byteLength) }, { ...extra, "x-voxgate-request-id": requestId }));
  out.write(body);
  out.end();
  return undefined;
}
