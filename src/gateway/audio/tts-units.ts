import { jsonObject } from "./stt-units.js";

/**
 * Text-to-speech units counted from the wire: characters of the input text the vendor synthesizes.
 * Characters are Unicode code points (what the vendors bill), not UTF-16 units. Pure functions.
 */

export function characterCount(text: string): number {
  let n = 0;
  for (const _ of text) n++;
  return n;
}

function textField(body: unknown, field: string): string | null {
  if (typeof body !== "object" || body === null || Array.isArray(body)) return null;
  const v = (body as Record<string, unknown>)[field];
  return typeof v === "string" ? v : null;
}

/** OpenAI `/audio/speech`: `input`. */
export const openaiSpeechText = (body: unknown) => textField(body, "input");
/** Deepgram `/v1/speak`: `text`. */
export const deepgramSpeakText = (body: unknown) => textField(body, "text");
/** ElevenLabs `/text-to-speech/{voice}` and `/stream`: `text`. */
export const elevenlabsText = (body: unknown) => textField(body, "text");
/** Cartesia `/tts/bytes` and each WebSocket generation request: `transcript`. */
export const cartesiaTranscript = (body: unknown) => textField(body, "transcript");

/**
 * Characters of one ElevenLabs `stream-input` / `multi-stream-input` client message. The opening
 * message of a context is a single space that primes the connection and is not synthesized; an empty
 * text closes a context. Both count 0.
 */
export function elevenlabsWsCharacters(frame: string): number {
  const msg = jsonObject(frame);
  return msg ? elevenlabsMessageCharacters(msg) : 0;
}

export function elevenlabsMessageCharacters(msg: Record<string, unknown>): number {
  const text = textField(msg, "text");
  if (text === null || text === " ") return 0;
  return characterCount(text);
}

/** Characters of one Cartesia WebSocket client message (a generation request, or 0 for a cancel). */
export function cartesiaWsCharacters(frame: string): number {
  const msg = jsonObject(frame);
  return msg ? cartesiaMessageCharacters(msg) : 0;
}

export function cartesiaMessageCharacters(msg: Record<string, unknown>): number {
  if (msg.cancel === true) return 0;
  const text = cartesiaTranscript(msg);
  return text === null ? 0 : characterCount(text);
}

/** Characters of one Deepgram speak WebSocket client message (`{"type": "Speak", "text"}`). */
export function deepgramSpeakWsCharacters(frame: string): number {
  const msg = jsonObject(frame);
  if (msg?.type !== "Speak") return 0;
  const text = deepgramSpeakText(msg);
  return text === null ? 0 : characterCount(text);
}
