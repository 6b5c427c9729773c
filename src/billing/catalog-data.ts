import type { CatalogEntryInput } from "../config/schema.js";

/**
 * The price catalog shipped with Voxgate: vendor LIST prices in USD, per canonical unit:
 * llm per 1M tokens (input / output / cached input), stt per minute, tts per 1k characters.
 * Each entry carries the date it was read and where. Vendors change prices: verify before you bill,
 * and override or add entries in voxgate.yaml under `pricing.catalog` (same field names).
 *
 * Keys ending in `*` price every model id with that prefix (`deepgram/aura-2-*`: each Aura-2 voice is
 * its own model id); an exact key wins over a prefix, the longest prefix over a shorter one.
 *
 * A price of null means the catalog KNOWS the model but holds no rate for it (plan- or credit-based
 * pricing with no public list price): records of it rate as "unrated", never as a silent zero.
 * Self-hosted models are declared at zero cost (`self_hosted: true`) under `self-hosted/<model>`;
 * a record of a self-hosted (openai_compatible) provider finds them by model name.
 *
 * Entries are grouped by the vendor page they were read from (`from`: each cites it as `source`). To
 * update: change the numbers, set `as_of` to the day you read the page, keep the page.
 */
type Entry = CatalogEntryInput & { modality: "stt" | "llm" | "tts"; as_of: string; source: string };

const OPENAI = "openai.com/api/pricing (standard tier)";
const GROQ = "groq.com/pricing (on-demand)";

/** An entry before its vendor page is named: `note`, if any, is added to the page (`<page>; <note>`). */
type Priced = Omit<Entry, "source"> & { note?: string };

/** The entries read from one vendor page: each cites it as its source. */
function from(source: string, entries: Record<string, Priced>): Record<string, Entry> {
  return Object.fromEntries(Object.entries(entries).map(([key, { note, ...e }]) => [key, { ...e, source: note === undefined ? source : `${source}; ${note}` }]));
}

const llm = (input: number, cached: number, output: number, as_of: string): Priced => ({
  modality: "llm",
  input_price_usd: input,
  cached_input_price_usd: cached,
  output_price_usd: output,
  as_of,
});
const stt = (perMinute: number | null, as_of: string): Priced => ({ modality: "stt", price_usd: perMinute, as_of });
/** A token-billed transcription model: per 1M tokens (input, output) when the answer reports tokens, else per minute. */
const sttTokens = (perMinute: number, input: number, output: number, as_of: string): Priced => ({
  modality: "stt",
  price_usd: perMinute,
  input_price_usd: input,
  output_price_usd: output,
  as_of,
});
const tts = (per1k: number | null, as_of: string): Priced => ({ modality: "tts", price_usd: per1k, as_of });
const self = (modality: "stt" | "llm" | "tts"): Priced =>
  modality === "llm"
    ? { modality, input_price_usd: 0, cached_input_price_usd: 0, output_price_usd: 0, self_hosted: true, as_of: "2025-10-01" }
    : { modality, price_usd: 0, self_hosted: true, as_of: "2025-10-01" };

export const CATALOG_VERSION = "2025-10-01";

export const SHIPPED_CATALOG: Record<string, Entry> = {
  // OpenAI LLMs
  ...from(OPENAI, {
    "openai/gpt-4o": llm(2.5, 1.25, 10, "2025-10-01"),
    "openai/gpt-4o-mini": llm(0.15, 0.075, 0.6, "2025-10-01"),
    "openai/gpt-4.1": llm(2, 0.5, 8, "2025-10-01"),
    "openai/gpt-4.1-mini": llm(0.4, 0.1, 1.6, "2025-10-01"),
    "openai/gpt-4.1-nano": llm(0.1, 0.025, 0.4, "2025-10-01"),
    "openai/gpt-5": llm(1.25, 0.125, 10, "2025-10-01"),
    "openai/gpt-5-mini": llm(0.25, 0.025, 2, "2025-10-01"),
    "openai/gpt-5-nano": llm(0.05, 0.005, 0.4, "2025-10-01"),
    "openai/o4-mini": llm(1.1, 0.275, 4.4, "2025-10-01"),
  }),
  // Realtime (speech-to-speech): text and audio tokens priced apart; cached input $0.40 for both.
  ...from("developers.openai.com/api/docs/models/gpt-realtime-1.5 (the same table as gpt-realtime; text $4/$16, audio $32/$64, cached $0.40)", {
    "openai/gpt-realtime": { ...llm(4, 0.4, 16, "2026-11-27"), input_audio_price_usd: 32, output_audio_price_usd: 64 },
  }),
  // Anthropic LLMs
  ...from("anthropic.com/pricing#api (cached = cache read)", {
    "anthropic/claude-sonnet-4-5": llm(3, 0.3, 15, "2025-10-01"),
    "anthropic/claude-sonnet-4-0": llm(3, 0.3, 15, "2025-10-01"),
    "anthropic/claude-haiku-4-5": llm(1, 0.1, 5, "2025-10-16"),
    "anthropic/claude-3-5-haiku-latest": llm(0.8, 0.08, 4, "2025-10-01"),
    "anthropic/claude-opus-4-1": llm(15, 1.5, 75, "2025-10-01"),
  }),
  // Google Gemini LLMs
  ...from("ai.google.dev/gemini-api/docs/pricing (paid tier, text input; cached = context caching)", {
    "gemini/gemini-2.5-flash": llm(0.3, 0.03, 2.5, "2026-11-28"),
    "gemini/gemini-2.5-flash-lite": llm(0.1, 0.01, 0.4, "2026-11-28"),
    "gemini/gemini-2.5-pro": { ...llm(1.25, 0.125, 10, "2026-11-28"), note: "prompts up to 200k tokens" },
  }),
  // Groq LLMs (no prompt-cache discount listed: cached = input)
  ...from(GROQ, {
    "groq/llama-3.1-8b-instant": llm(0.05, 0.05, 0.08, "2025-10-01"),
    "groq/llama-3.3-70b-versatile": llm(0.59, 0.59, 0.79, "2025-10-01"),
    "groq/openai/gpt-oss-20b": llm(0.1, 0.1, 0.5, "2025-10-01"),
    "groq/openai/gpt-oss-120b": llm(0.15, 0.15, 0.75, "2025-10-01"),
  }),
  // STT, per minute of audio
  ...from("deepgram.com/pricing (pay as you go, streaming)", {
    "deepgram/nova-3": stt(0.0077, "2025-10-01"),
    "deepgram/nova-2": stt(0.0058, "2025-10-01"),
    "deepgram/flux-general-en": stt(0.0077, "2025-10-01"),
  }),
  ...from(OPENAI, {
    "openai/whisper-1": stt(0.006, "2025-10-01"),
  }),
  ...from("openai.com/api/pricing: per 1M tokens, input at the audio rate (text prompt tokens cost less), output text; per minute when no tokens are reported", {
    "openai/gpt-4o-transcribe": sttTokens(0.006, 6, 10, "2026-11-28"),
    "openai/gpt-4o-mini-transcribe": sttTokens(0.003, 3, 5, "2026-11-28"),
  }),
  ...from("assemblyai.com/pricing (Universal-Streaming billed per session hour: $0.15; Universal-3 Pro streaming $0.45)", {
    "assemblyai/universal-streaming-english": stt(0.0025, "2026-11-28"),
    "assemblyai/universal-streaming-multilingual": stt(0.0025, "2026-11-28"),
    "assemblyai/universal-streaming": stt(0.0025, "2026-11-28"),
    "assemblyai/u3-rt-pro": stt(0.0075, "2026-11-28"),
  }),
  ...from(GROQ, {
    "groq/whisper-large-v3": { ...stt(0.00185, "2025-10-01"), note: "$0.111 per audio hour" },
    "groq/whisper-large-v3-turbo": { ...stt(0.000667, "2025-10-01"), note: "$0.04 per audio hour" },
  }),
  // TTS, per 1k characters
  ...from("elevenlabs.io/pricing/api (per 1k characters, API)", {
    "elevenlabs/eleven_flash_v2_5": tts(0.05, "2025-10-01"),
    "elevenlabs/eleven_turbo_v2_5": tts(0.05, "2025-10-01"),
    "elevenlabs/eleven_multilingual_v2": tts(0.1, "2025-10-01"),
    "elevenlabs/eleven_v3": tts(0.1, "2025-10-01"),
    "elevenlabs/eleven_flash_v2": tts(0.05, "2026-11-28"),
    "elevenlabs/eleven_turbo_v2": tts(0.05, "2026-11-28"),
  }),
  ...from("docs.cartesia.ai/pricing (~1 credit per character) at cartesia.ai/pricing's Startup plan ($49 for 1.25M credits)", {
    "cartesia/sonic-2": tts(0.039, "2026-11-28"),
    "cartesia/sonic-3": tts(0.039, "2026-11-28"),
    "cartesia/sonic-turbo": tts(0.039, "2026-11-28"),
  }),
  ...from("deepgram.com/pricing (pay as you go; Aura-2 $0.030, Aura-1 $0.015 per 1k characters)", {
    "deepgram/aura-2-*": tts(0.03, "2026-11-28"),
    "deepgram/aura-*": tts(0.015, "2026-11-28"),
  }),
  ...from(OPENAI, {
    "openai/tts-1": tts(0.015, "2025-10-01"),
    "openai/tts-1-hd": tts(0.03, "2025-10-01"),
    "openai/gpt-4o-mini-tts": { ...tts(0.015, "2025-10-01"), note: "estimate: billed per token, ~$15 per 1M characters" },
  }),
  // Self-hosted (openai_compatible providers: vLLM, Ollama, LocalAI, speaches): declared zero cost
  ...from("self-hosted: no per-request vendor charge; your hardware cost is not per request", {
    "self-hosted/llama-3.1-8b": self("llm"),
    "self-hosted/llama-3.1-8b-instruct": self("llm"),
    "self-hosted/qwen2.5-7b-instruct": self("llm"),
    "self-hosted/whisper-large-v3": self("stt"),
    "self-hosted/faster-whisper-large-v3": self("stt"),
    "self-hosted/kokoro": self("tts"),
    "self-hosted/piper": self("tts"),
  }),
};
