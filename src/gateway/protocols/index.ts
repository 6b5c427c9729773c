import type { VendorProtocol } from "../protocol.js";
import { anthropicProtocol } from "./anthropic.js";
import { openaiProtocol } from "./openai.js";

/** Every vendor protocol the gateway serves, each under its own prefix. */
export const PROTOCOLS: readonly VendorProtocol[] = [openaiProtocol, anthropicProtocol];
