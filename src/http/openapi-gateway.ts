import type { OpenAPIHono, RouteConfig } from "@hono/zod-openapi";
import { ATTRIBUTION_PATH } from "../gateway/attribution.js";
import type { VendorProtocol } from "../gateway/protocol.js";
import { cartesiaBytesRoute, cartesiaWs } from "../gateway/protocols/cartesia.js";
import { PROTOCOLS } from "../gateway/protocols/index.js";
import { WS_PROTOCOLS } from "../gateway/ws/protocols.js";
import type { AppEnv } from "./app-env.js";

/**
 * The gateway's routes in the document. They speak each vendor's own protocol (request and answer
 * bodies, error shape, where the key goes), so the document names them, their parameters and the
 * vendor's prefix, and leaves the bodies to the vendor's API: Voxgate forwards them. Read from the
 * protocol tables themselves (src/gateway/protocols, src/gateway/ws/protocols.ts), so a new vendor
 * route appears here without an edit. The gateway code declares its routes on its own hot path
 * (no per-request validation layer), hence this separate description.
 */
export function registerGatewayPaths(app: OpenAPIHono<AppEnv>): void {
  const attribution = toOpenApi(ATTRIBUTION_PATH);
  const add = (method: "get" | "post", path: string, protocol: VendorProtocol, summary: string, websocket: boolean) => {
    for (const p of [path, `${attribution}${path}`]) {
      app.openAPIRegistry.registerPath(gatewayPath(method, p, protocol, summary, websocket, p !== path));
    }
  };
  for (const protocol of PROTOCOLS) {
    for (const route of protocol.routes) {
      const summary = route.kind === "proxy" ? `${protocol.id} ${route.modality}: forwarded to a routed provider` : `${protocol.id}: answered by the gateway`;
      add(route.method === "GET" ? "get" : "post", toOpenApi(`${protocol.prefix}${route.path}`), protocol, summary, false);
    }
  }
  for (const wsp of WS_PROTOCOLS) {
    for (const route of wsp.routes) {
      const refusals = wsp.closeRefusal ? " (refusals arrive after the upgrade, as the vendor's error frame and close code)" : "";
      const summary = `${wsp.protocol.id} ${route.modality} over WebSocket: relayed to a routed provider${refusals}`;
      add("get", toOpenApi(`${wsp.protocol.prefix}${route.path}`), wsp.protocol, summary, true);
      if (wsp === cartesiaWs) app.openAPIRegistry.registerPath(gatewayPath("get", toOpenApi(route.path), wsp.protocol, `${summary} (Cartesia's fixed path)`, true, false));
    }
  }
  app.openAPIRegistry.registerPath(
    gatewayPath("post", toOpenApi(cartesiaBytesRoute.path), cartesiaWs.protocol, "cartesia tts: forwarded (Cartesia's fixed path)", false, false),
  );
}

function toOpenApi(honoPath: string): string {
  return honoPath.replaceAll(/:([A-Za-z0-9_]+)(\{[^}]*\})?/g, "{$1}");
}

function gatewayPath(method: "get" | "post", path: string, protocol: VendorProtocol, summary: string, websocket: boolean, attributed: boolean): RouteConfig {
  const names = [...path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1] ?? "");
  return {
    method,
    path,
    tags: ["gateway"],
    summary,
    description:
      `Vendor protocol ${protocol.id} under ${protocol.prefix}: the body and answer are the vendor's own, and so is the error shape ` +
      "(its code names Voxgate's reason, e.g. budget_exceeded). The Voxgate key goes where the vendor's SDK sends its key; the key needs the infer scope." +
      (websocket
        ? " A WebSocket upgrade; a plain GET answers 426. A governed stream (gateway.streams): 429 too_many_streams past the key's max_per_key, closed 1000 at idle_timeout_s or max_duration_s, 1008 when its key is revoked, 1013 when a side stops reading (docs/api/gateway-audio.md)."
        : "") +
      (attributed ? " Behind /p/{project}/s/{session}: the call is attributed to that project and session." : ""),
    security: [{ bearer: ["infer"] }],
    parameters: names.map((name) => ({ name, in: "path" as const, required: true, schema: { type: "string" as const } })),
    responses: {
      200: { description: "the vendor's answer (JSON, a stream or audio)" },
      ...(websocket ? { 101: { description: "switching to the WebSocket relay" }, 426: { description: "a WebSocket upgrade is required" } } : {}),
      default: { description: "an error in the vendor's error shape" },
    },
  } as RouteConfig;
}
