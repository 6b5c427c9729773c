import type { VendorProtocol } from "../protocol.js";
import { anthropicProtocol } from "./anthropic.js";
import { cartesiaProtocol } from "./cartesia.js";
import { deepgramProtocol } from "./deepgram.js";
import { elevenlabsProtocol } from "./elevenlabs.js";
import { openaiProtocol } from "./openai.js";

/** Every vendor protocol the gateway serves, each under its own prefix. */
export const PROTOCOLS: readonly VendorProtocol[] = [openaiProtocol, anthropicProtocol, deepgramProtocol, elevenlabsProtocol, cartesiaProtocol];
