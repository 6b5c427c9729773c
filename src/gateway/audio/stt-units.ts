import { jsonBoundsProblem } from "../../http/body.js";

/**
 * Speech-to-text units counted from the wire (docs/api/gateway-audio.md): what the vendor reports it
 * processed, else what the client's audio measures. Never what the client claims. Pure functions.
 */

/** Seconds of raw 16-bit PCM: bytes ÷ (rate × channels × 2). Null when the format does not say. */
export function linear16Seconds(bytes: number, sampleRate: number, channels = 1): number | null {
  if (!(sampleRate > 0) || !(channels > 0) || !(bytes >= 0)) return null;
  return bytes / (sampleRate * channels * 2);
}

/** Bytes per second of a raw (headerless) encoding, or null for a container or an unknown codec. */
export function rawBytesPerSecond(encoding: string | null, sampleRate: number | null, channels: number): number | null {
  if (!encoding || !sampleRate || !(sampleRate > 0) || !(channels > 0)) return null;
  switch (encoding.toLowerCase()) {
    case "linear16":
    case "pcm16":
    case "pcm_s16le":
      return sampleRate * channels * 2;
    case "linear32":
    case "pcm_f32le":
      return sampleRate * channels * 4;
    case "mulaw":
    case "alaw":
    case "g711_ulaw":
    case "g711_alaw":
      return sampleRate * channels;
    default:
      return null;
  }
}

export interface DeepgramAudioFormat {
  encoding: string | null;
  sampleRate: number | null;
  channels: number;
  /** multichannel=true: Deepgram transcribes (and bills) each channel. */
  multichannel: boolean;
}

function positiveInt(text: string | null): number | null {
  if (text === null || !/^\d{1,7}$/.test(text)) return null;
  const n = Number(text);
  return n > 0 ? n : null;
}

/** The audio format a Deepgram listen request declares in its query (`encoding`, `sample_rate`, `channels`). */
export function deepgramAudioFormat(query: URLSearchParams): DeepgramAudioFormat {
  return {
    encoding: query.get("encoding"),
    sampleRate: positiveInt(query.get("sample_rate")),
    channels: positiveInt(query.get("channels")) ?? 1,
    multichannel: query.get("multichannel") === "true",
  };
}

/** Seconds of raw audio bytes in a declared format, or null when the bytes cannot be timed (a container). */
export function rawAudioSeconds(bytes: number, format: DeepgramAudioFormat): number | null {
  const rate = rawBytesPerSecond(format.encoding, format.sampleRate, format.channels);
  return rate === null ? null : bytes / rate;
}

export function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function finiteNonNegative(v: unknown): number | null {
  return typeof v === "number" && Number.isFinite(v) && v >= 0 ? v : null;
}

/** Parses a JSON text frame or body; null for anything that is not a JSON object. */
export function jsonObject(text: string): Record<string, unknown> | null {
  // A client's frame (up to 16 MiB) is read here too: bounded before JSON.parse, as request bodies are.
  if (jsonBoundsProblem(text)) return null;
  try {
    const v: unknown = JSON.parse(text);
    return isRecord(v) ? v : null;
  } catch {
    return null;
  }
}

/**
 * Billed seconds of a Deepgram pre-recorded answer: `metadata.duration`, times the channel count
 * when the request asked for multichannel.
 */
export function deepgramPrerecordedSeconds(body: unknown, format: DeepgramAudioFormat): number | null {
  if (!isRecord(body) || !isRecord(body.metadata)) return null;
  const duration = finiteNonNegative(body.metadata.duration);
  if (duration === null) return null;
  const channels = format.multichannel ? (finiteNonNegative(body.metadata.channels) ?? format.channels) : 1;
  return duration * Math.max(1, channels);
}

/** What one server frame of a Deepgram live stream tells the meter. */
export interface DeepgramLiveFrame {
  type: string | null;
  /** `Metadata.duration`: the seconds Deepgram processed (and bills), sent after CloseStream. */
  metadataDuration: number | null;
  /** `start + duration` of a `Results` frame: how far into the audio Deepgram has transcribed. */
  resultsEnd: number | null;
}

export function deepgramLiveFrame(text: string): DeepgramLiveFrame {
  const msg = jsonObject(text);
  const type = msg && typeof msg.type === "string" ? msg.type : null;
  if (!msg) return { type, metadataDuration: null, resultsEnd: null };
  if (type === "Metadata") return { type, metadataDuration: finiteNonNegative(msg.duration), resultsEnd: null };
  if (type === "Results") {
    const start = finiteNonNegative(msg.start);
    const duration = finiteNonNegative(msg.duration);
    return { type, metadataDuration: null, resultsEnd: start !== null && duration !== null ? start + duration : null };
  }
  return { type, metadataDuration: null, resultsEnd: null };
}

/**
 * The seconds of a Deepgram live stream: Deepgram's own `Metadata.duration` when it arrived, else the
 * raw bytes the client sent in the declared format, else how far the results reached (a stream cut
 * before Deepgram's summary).
 */
export function deepgramLiveSeconds(m: { metadataDuration: number | null; audioBytes: number; resultsEnd: number | null }, format: DeepgramAudioFormat): number | null {
  if (m.metadataDuration !== null) return m.metadataDuration;
  const fromBytes = rawAudioSeconds(m.audioBytes, format);
  if (fromBytes !== null) return fromBytes;
  return m.resultsEnd;
}

/** Units of an OpenAI transcription answer. */
export interface TranscriptionUsage {
  seconds: number | null;
  inputTokens: number | null;
  outputTokens: number | null;
}

/**
 * OpenAI `/audio/transcriptions` JSON: `usage: {type: "duration", seconds}` (whisper), or
 * `usage: {type: "tokens", input_tokens, output_tokens}` (gpt-4o-*-transcribe); `verbose_json`
 * carries `duration` too. Text formats (text, srt, vtt) carry none: the caller times the upload.
 */
export function openaiTranscriptionUsage(body: unknown): TranscriptionUsage {
  const out: TranscriptionUsage = { seconds: null, inputTokens: null, outputTokens: null };
  if (!isRecord(body)) return out;
  const usage = isRecord(body.usage) ? body.usage : null;
  if (usage?.type === "duration") out.seconds = finiteNonNegative(usage.seconds);
  if (usage?.type === "tokens") {
    out.inputTokens = finiteNonNegative(usage.input_tokens);
    out.outputTokens = finiteNonNegative(usage.output_tokens);
  }
  out.seconds ??= finiteNonNegative(body.duration);
  return out;
}

/**
 * Duration of a WAV file from its header (fmt byte rate, data chunk size); null for anything else.
 * Used when a transcription answer carries no duration (text formats, token-billed models).
 */
export function wavSeconds(bytes: Uint8Array): number | null {
  if (bytes.length < 12) return null;
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const tag = (at: number) => String.fromCharCode(bytes[at] ?? 0, bytes[at + 1] ?? 0, bytes[at + 2] ?? 0, bytes[at + 3] ?? 0);
  if (tag(0) !== "RIFF" || tag(8) !== "WAVE") return null;
  let byteRate: number | null = null;
  let at = 12;
  while (at + 8 <= bytes.length) {
    const id = tag(at);
    const size = view.getUint32(at + 4, true);
    if (id === "fmt " && at + 16 <= bytes.length) byteRate = view.getUint32(at + 16, true);
    if (id === "data") {
      if (!byteRate) return null;
      // A streamed WAV writes 0 or 0xFFFFFFFF as its data size: take what is actually there.
      const available = bytes.length - (at + 8);
      const dataBytes = size === 0 || size === 0xffffffff || size > available ? available : size;
      return dataBytes / byteRate;
    }
    at += 8 + size + (size % 2);
  }
  return null;
}

/** The audio format of an OpenAI realtime transcription session: bytes per second of its input audio. */
export function realtimeInputBytesPerSecond(format: unknown): number | null {
  // Beta API: "pcm16" (24 kHz mono), "g711_ulaw" / "g711_alaw" (8 kHz); GA: {type: "audio/pcm", rate}.
  if (format === "pcm16") return 24_000 * 2;
  if (format === "g711_ulaw" || format === "g711_alaw") return 8_000;
  if (isRecord(format)) {
    if (format.type === "audio/pcm") return (finiteNonNegative(format.rate) || 24_000) * 2;
    if (format.type === "audio/pcmu" || format.type === "audio/pcma") return 8_000;
  }
  return null;
}

/** What one client frame of an OpenAI realtime transcription session tells the meter. */
export interface RealtimeClientFrame {
  /** Decoded bytes of `input_audio_buffer.append`. */
  audioBytes: number;
  /** The input format a `session.update` / `transcription_session.update` set, if any. */
  inputFormat: unknown;
}

export function decodedBase64Length(b64: string): number {
  const trimmed = b64.replace(/[\s]/g, "");
  const padding = trimmed.endsWith("==") ? 2 : trimmed.endsWith("=") ? 1 : 0;
  return Math.max(0, Math.floor((trimmed.length * 3) / 4) - padding);
}

export function realtimeClientFrame(text: string): RealtimeClientFrame {
  const msg = jsonObject(text);
  const out: RealtimeClientFrame = { audioBytes: 0, inputFormat: undefined };
  if (!msg) return out;
  if (msg.type === "input_audio_buffer.append" && typeof msg.audio === "string") out.audioBytes = decodedBase64Length(msg.audio);
  if ((msg.type === "session.update" || msg.type === "transcription_session.update") && isRecord(msg.session)) {
    const s = msg.session;
    const ga = isRecord(s.audio) && isRecord(s.audio.input) ? s.audio.input.format : undefined;
    out.inputFormat = s.input_audio_format ?? ga;
  }
  return out;
}

/** What one server frame of an OpenAI realtime transcription session tells the meter. */
export interface RealtimeServerFrame {
  /** A transcription delta or completion: the first one is the stream's first byte. */
  transcript: boolean;
  /** `usage.seconds` of a completed transcription (duration-billed models). */
  usageSeconds: number | null;
  inputTokens: number | null;
  outputTokens: number | null;
  /** The message of an `error` event. */
  error: string | null;
}

export function realtimeServerFrame(text: string): RealtimeServerFrame {
  const msg = jsonObject(text);
  const out: RealtimeServerFrame = { transcript: false, usageSeconds: null, inputTokens: null, outputTokens: null, error: null };
  if (!msg || typeof msg.type !== "string") return out;
  if (msg.type === "error") {
    const e = isRecord(msg.error) ? msg.error : {};
    out.error = typeof e.message === "string" && e.message !== "" ? e.message.slice(0, 2000) : "the vendor reported an error";
  }
  if (msg.type === "conversation.item.input_audio_transcription.delta") out.transcript = true;
  if (msg.type === "conversation.item.input_audio_transcription.completed") {
    out.transcript = true;
    const u = openaiTranscriptionUsage(msg);
    out.usageSeconds = u.seconds;
    out.inputTokens = u.inputTokens;
    out.outputTokens = u.outputTokens;
  }
  return out;
}
