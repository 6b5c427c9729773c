import { randomUUID } from "node:crypto";
import type { Context } from "hono";
import { Hono } from "hono";
import { MODALITIES } from "../config/schema.js";
import type { AppEnv } from "../http/app-env.js";
import { ATTRIBUTION_PATH } from "./attribution.js";
import { headersOf, nodeBindings } from "./exchange.js";
import { admitCaller } from "./admit.js";
import type { Gateway } from "./gateway.js";
import { handleProxy } from "./pipeline.js";
import type { GatewayRoute, InboundRequest, LocalRoute, RoutableView, VendorProtocol } from "./protocol.js";
import { PROTOCOLS } from "./protocols/index.js";
import { answerError, answerHeaders, openOutbound } from "./respond.js";
import { routableModels } from "./resolve.js";

/**
 * The gateway's routes: every protocol's routes under its prefix, and again behind the attribution
 * prefix /p/{project}/s/{session}. Mounted before the request-log and security-header middleware:
 * the gateway writes its own headers and records every call instead of logging it.
 */
export function gatewayRoutes(gw: Gateway, protocols: readonly VendorProtocol[] = PROTOCOLS) {
  const app = new Hono<AppEnv>();
  for (const protocol of protocols) {
    for (const route of protocol.routes) {
      const handler = (c: Context<AppEnv>) => handle(gw, protocol, route, c);
      app.on(route.method, [`${protocol.prefix}${route.path}`, `${ATTRIBUTION_PATH}${protocol.prefix}${route.path}`], handler);
    }
    const unknown = (c: Context<AppEnv>) => {
      const out = openOutbound(c, nodeBindings(c));
      answerError(out, protocol, 404, "invalid_request", `no route ${c.req.method} ${c.req.path}`, randomUUID());
      return out.done(undefined);
    };
    app.all(`${protocol.prefix}/*`, unknown);
    app.all(`${ATTRIBUTION_PATH}${protocol.prefix}/*`, unknown);
  }
  return app;
}

function handle(gw: Gateway, protocol: VendorProtocol, route: GatewayRoute, c: Context<AppEnv>) {
  return route.kind === "proxy" ? handleProxy(gw, protocol, route, c) : handleLocal(gw, protocol, route, c);
}

/** A route the gateway answers itself: the same loopback, key and scope rules as a proxied call. */
async function handleLocal(gw: Gateway, protocol: VendorProtocol, route: LocalRoute, c: Context<AppEnv>): Promise<Response> {
  const node = nodeBindings(c);
  const out = openOutbound(c, node);
  const requestId = randomUUID();
  const headers = headersOf(c, node);
  const query = new URL(c.req.url).searchParams;
  const params = c.req.param() as Record<string, string>;
  const caller = await admitCaller(gw, protocol, { headers, query, params, remoteAddress: out.remoteAddress });
  if (!caller.ok) answerError(out, protocol, caller.status, caller.code, caller.message, requestId);
  else {
    const table = gw.table;
    const routable: RoutableView = {
      models: MODALITIES.flatMap((modality) => routableModels(table, { modality, providerTypes: protocol.providerTypes })),
      stacks: table.stacks,
    };
    const inbound: InboundRequest = { method: c.req.method, path: route.path, params, query, headers, body: Buffer.alloc(0) };
    const a = route.answer({ inbound, routable });
    const body = typeof a.body === "string" ? Buffer.from(a.body) : a.body;
    out.head(a.status, answerHeaders({ ...a.headers, "content-length": String(body.byteLength) }, {}, requestId));
    out.write(body);
    out.end();
  }
  return out.done(undefined);
}
