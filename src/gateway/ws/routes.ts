import type { Context } from "hono";
import { Hono } from "hono";
import type { AppEnv } from "../../http/app-env.js";
import { ATTRIBUTION_PATH } from "../attribution.js";
import type { Gateway } from "../gateway.js";
import { handleProxy } from "../pipeline.js";
import { cartesiaBytesRoute, cartesiaProtocol, cartesiaWs } from "../protocols/cartesia.js";
import { assemblyaiWs } from "../protocols/assemblyai.js";
import { deepgramWs } from "../protocols/deepgram.js";
import { elevenlabsWs } from "../protocols/elevenlabs.js";
import { openaiProtocol } from "../protocols/openai.js";
import { realtimeRoute } from "../protocols/openai-audio.js";
import { realtimeConversationRoute } from "../protocols/openai-realtime.js";
import type { UpstreamTarget } from "../protocol.js";
import { handleWebSocket } from "./pipeline.js";
import type { WsProtocol } from "./ws-route.js";

const bearer = (t: UpstreamTarget): Record<string, string> => (t.apiKey ? { authorization: `Bearer ${t.apiKey}` } : {});
const openaiRealtimeWs: WsProtocol = { protocol: openaiProtocol, routes: [realtimeRoute(bearer), realtimeConversationRoute(bearer)] };

/** Every vendor's WebSocket routes. */
export const WS_PROTOCOLS: readonly WsProtocol[] = [openaiRealtimeWs, deepgramWs, elevenlabsWs, cartesiaWs, assemblyaiWs];

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
  app.post(cartesiaBytesRoute.path, (c) => handleProxy(gw, cartesiaProtocol, cartesiaBytesRoute, c));
  return app;
}
