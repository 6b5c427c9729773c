import { cartesiaWs } from "../protocols/cartesia.js";
import { assemblyaiWs } from "../protocols/assemblyai.js";
import { openAiToDeepgramBridge } from "../failover/deepgram-transcription-leg.js";
import { openaiRealtimeWire } from "../failover/openai-live.js";
import { deepgramProtocol, deepgramWs } from "../protocols/deepgram.js";
import { elevenlabsWs } from "../protocols/elevenlabs.js";
import { openaiProtocol } from "../protocols/openai.js";
import { realtimeRoute } from "../protocols/openai-audio.js";
import { realtimeConversationRoute } from "../protocols/openai-realtime.js";
import type { UpstreamTarget } from "../protocol.js";
import type { WsProtocol, WsRoute } from "./ws-route.js";

const bearer = (t: UpstreamTarget): Record<string, string> => (t.apiKey ? { authorization: `Bearer ${t.apiKey}` } : {});
/**
 * OpenAI realtime transcription fails over mid-call to OpenAI candidates and, translated, to Deepgram
 * ones (src/gateway/failover/); wired here, where both protocols are known, so neither imports the other's.
 */
const realtimeTranscriptionWs: WsRoute = {
  ...realtimeRoute(bearer),
  failover: () => openaiRealtimeWire(),
  crossFailover: () => [openAiToDeepgramBridge(deepgramProtocol)],
};
const openaiRealtimeWs: WsProtocol = { protocol: openaiProtocol, routes: [realtimeTranscriptionWs, realtimeConversationRoute(bearer)] };

/**
 * Every vendor's WebSocket routes, each under its protocol's prefix (and behind the attribution
 * prefix); Cartesia's are also served at the root, where its clients' fixed paths arrive.
 */
export const WS_PROTOCOLS: readonly WsProtocol[] = [openaiRealtimeWs, deepgramWs, elevenlabsWs, cartesiaWs, assemblyaiWs];
