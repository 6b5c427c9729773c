import type { ProviderType } from "../config/schema.js";

/**
 * What Voxgate knows about each provider type: the vendor's default API base (its host is always a
 * permitted base_url host) and the cheapest authenticated call that proves a key works.
 */
export interface VendorProfile {
  defaultBaseUrl: string | null;
  /** Appended to the base URL's path for the health check. */
  healthPath: string;
  authHeaders(apiKey: string): Record<string, string>;
  /** cloud, or local for self-hosted servers (status `type`). */
  location: "cloud" | "local";
}

const bearer = (k: string): Record<string, string> => (k ? { authorization: `Bearer ${k}` } : {});

export const VENDORS: Record<ProviderType, VendorProfile> = {
  openai: { defaultBaseUrl: "https://api.openai.com/v1", healthPath: "/models", authHeaders: bearer, location: "cloud" },
  anthropic: {
    defaultBaseUrl: "https://api.anthropic.com/v1",
    healthPath: "/models",
    authHeaders: (k) => ({ "x-api-key": k, "anthropic-version": "2023-06-01" }),
    location: "cloud",
  },
  groq: { defaultBaseUrl: "https://api.groq.com/openai/v1", healthPath: "/models", authHeaders: bearer, location: "cloud" },
  deepgram: {
    defaultBaseUrl: "https://api.deepgram.com/v1",
    healthPath: "/projects",
    authHeaders: (k) => ({ authorization: `Token ${k}` }),
    location: "cloud",
  },
  elevenlabs: {
    defaultBaseUrl: "https://api.elevenlabs.io/v1",
    healthPath: "/user",
    authHeaders: (k) => ({ "xi-api-key": k }),
    location: "cloud",
  },
  cartesia: {
    defaultBaseUrl: "https://api.cartesia.ai",
    healthPath: "/voices",
    authHeaders: (k) => ({ "x-api-key": k, "cartesia-version": "2024-06-10" }),
    location: "cloud",
  },
  // Cloud STT (voicegw.yaml's `assemblyai`): the key goes bare in Authorization; listing transcripts proves it.
  assemblyai: {
    defaultBaseUrl: "https://api.assemblyai.com/v2",
    healthPath: "/transcript",
    authHeaders: (k): Record<string, string> => (k ? { authorization: k } : {}),
    location: "cloud",
  },
  // Google Gemini (generativelanguage): the key in x-goog-api-key; listing models proves it.
  gemini: {
    defaultBaseUrl: "https://generativelanguage.googleapis.com",
    healthPath: "/v1beta/models",
    authHeaders: (k): Record<string, string> => (k ? { "x-goog-api-key": k } : {}),
    location: "cloud",
  },
  // Self-hosted OpenAI-compatible servers (vLLM, Ollama, LocalAI, speaches): base_url is required.
  openai_compatible: { defaultBaseUrl: null, healthPath: "/models", authHeaders: bearer, location: "local" },
};
