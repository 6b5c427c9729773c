import type { VendorProtocol } from "../protocol.js";
import { anthropicProtocol } from "./anthropic.js";
import { assemblyaiProtocol } from "./assemblyai.js";
import { cartesiaProtocol } from "./cartesia.js";
import { deepgramProtocol } from "./deepgram.js";
import { elevenlabsProtocol } from "./elevenlabs.js";
import { geminiProtocol } from "./gemini.js";
import { openaiProtocol } from "./openai.js";

/** Every vendor protocol the gateway serves, each under its own prefix. */
export const PROTOCOLS: readonly VendorProtocol[] = [openaiProtocol, anthropicProtocol, deepgramProtocol, elevenlabsProtocol, cartesiaProtocol, geminiProtocol, assemblyaiProtocol];
