import type { IncomingHttpHeaders } from "node:http";
import type { Context } from "hono";
import { RESPONSE_ALREADY_SENT } from "@hono/node-server/utils/response";
import { GATEWAY_SECURITY_HEADERS } from "../http/security-headers.js";
import { type HeaderList, NodeOutbound, type Outbound, WebOutbound, type nodeBindings } from "./exchange.js";
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

const SECURITY_NAMES = Object.keys(GATEWAY_SECURITY_HEADERS);
const isSecurityName = (name: string) => Object.hasOwn(GATEWAY_SECURITY_HEADERS, name);

/**
 * An answer's headers: the given ones (`drop`: names left out), then Voxgate's (`extra`, then the
 * request id), then GATEWAY_SECURITY_HEADERS. A later group wins over an earlier one for the same
 * name, the name keeping its first position: the same names, values and order as assigning the
 * three groups into one object in turn, which is what a clash (rare) does; otherwise every group's
 * names are new and are appended as they come.
 */
export function answerHeaders(base: Readonly<Record<string, string | string[] | undefined>>, extra: Readonly<Record<string, string>>, requestId: string, drop?: ReadonlySet<string>): HeaderList {
  const out: HeaderList = [];
  for (const name in base) {
    const v = base[name];
    if (v === undefined || drop?.has(name)) continue;
    if (isSecurityName(name) || name === "x-voxgate-request-id" || Object.hasOwn(extra, name)) return mergedHeaders(base, extra, requestId, drop);
    out.push(name, v);
  }
  for (const name in extra) {
    if (isSecurityName(name)) return mergedHeaders(base, extra, requestId, drop);
    if (name !== "x-voxgate-request-id") out.push(name, extra[name] as string);
  }
  out.push("x-voxgate-request-id", requestId);
  for (let i = 0; i < SECURITY_NAMES.length; i++) {
    const name = SECURITY_NAMES[i] as string;
    out.push(name, GATEWAY_SECURITY_HEADERS[name] as string);
  }
  return out;
}

/** answerHeaders when a name is in two groups: the groups assigned into one object in turn. */
function mergedHeaders(base: Readonly<Record<string, string | string[] | undefined>>, extra: Readonly<Record<string, string>>, requestId: string, drop?: ReadonlySet<string>): HeaderList {
  const merged: Record<string, string | string[]> = {};
  for (const name in base) {
    const v = base[name];
    if (v !== undefined && !drop?.has(name)) merged[name] = v;
  }
  Object.assign(merged, extra, { "x-voxgate-request-id": requestId }, GATEWAY_SECURITY_HEADERS);
  const out: HeaderList = [];
  for (const name in merged) out.push(name, merged[name] as string | string[]);
  return out;
}

/** The upstream answer's headers as relayed to the caller (connection headers and cookies dropped). */
export function relayHeaders(upstream: IncomingHttpHeaders, extra: Readonly<Record<string, string>>, requestId: string): HeaderList {
  return answerHeaders(upstream, extra, requestId, DROPPED_UPSTREAM);
}

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
  out.head(status, answerHeaders({ "content-type": e.contentType, "content-length": String(body.byteLength) }, extra, requestId));
  out.write(body);
  out.end();
  return undefined;
}
