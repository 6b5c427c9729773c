import type { Context } from "hono";
import { Hono } from "hono";
import type { AppEnv } from "../../http/app-env.js";
import { ATTRIBUTION_PATH } from "../attribution.js";
import type { Gateway } from "../gateway.js";
import { cartesiaWs } from "../protocols/cartesia.js";
import { handleWebSocket } from "./pipeline.js";
import { WS_PROTOCOLS } from "./protocols.js";

/**
 * The gateway's WebSocket routes, under each protocol's prefix and behind /p/{project}/s/{session}.
 * Mounted before the HTTP gateway routes (whose per-prefix catch-all would answer them). A plain GET
 * on a WebSocket route is a 426.
 *
 * Cartesia's paths are fixed in its clients (the LiveKit plugin's synthesize() drops a base URL's
 * path), so /tts/bytes and /tts/websocket are also served at the root, attributed by headers only.
 */
export function gatewayWsRoutes(gw: Gateway) {
  const app = new Hono<AppEnv>();
  for (const wsp of WS_PROTOCOLS) {
    for (const route of wsp.routes) {
      // Routes sharing a path (OpenAI's /realtime: transcription or conversation) are told apart by accepts().
      const sharing = wsp.routes.filter((r) => r.path === route.path);
      if (sharing[0] !== route) continue;
      const pick = (c: Context<AppEnv>) => (sharing.length === 1 ? route : (sharing.find((r) => r.accepts?.(new URL(c.req.url).searchParams) ?? true) ?? route));
      const handler = (c: Context<AppEnv>) => handleWebSocket(gw, wsp, pick(c), c);
      app.get(`${wsp.protocol.prefix}${route.path}`, handler);
      app.get(`${ATTRIBUTION_PATH}${wsp.protocol.prefix}${route.path}`, handler);
      if (wsp === cartesiaWs) app.get(route.path, handler);
    }
  }
  return app;
}
