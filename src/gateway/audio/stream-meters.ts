import type { Units } from "../protocol.js";
import type { TtsLegMeter } from "../failover/tts-legs.js";
import type { StreamMeter } from "../ws/relay.js";
import {
  type DeepgramAudioFormat,
  deepgramLiveFrame,
  deepgramLiveSeconds,
  jsonObject,
  realtimeClientFrame,
  realtimeInputBytesPerSecond,
  realtimeServerFrame,
  rawAudioSeconds,
} from "./stt-units.js";
import { vendorMessage } from "./tts-contexts.js";
import { deepgramSpeakWsCharacters } from "./tts-units.js";

/** Text of a text frame for parsing; binary frames are never parsed as JSON. */
const text = (frame: Buffer, isBinary: boolean): string | null => (isBinary ? null : frame.toString("utf8"));

/**
 * A transcription stream whose audio goes up as binary frames (Deepgram live, AssemblyAI): their
 * bytes are counted, a text frame up (a control message) is not work, and only text frames down (the
 * vendor's JSON) go to `answer`, which says whether one answers.
 */
export function binaryAudioMeter(vendor: { answer(frame: Buffer): boolean; units(audioBytes: number): Units; error?(): string | null }): StreamMeter {
  let audioBytes = 0;
  return {
    client(frame, isBinary) {
      if (!isBinary) return false;
      audioBytes += frame.length;
      return true;
    },
    upstream: (frame, isBinary) => !isBinary && vendor.answer(frame),
    units: () => vendor.units(audioBytes),
    ...(vendor.error && { error: vendor.error }),
  };
}

/** Deepgram live listen: binary frames are audio; `Results` answer; `Metadata.duration` is the bill. */
export function deepgramListenMeter(format: DeepgramAudioFormat): StreamMeter {
  let metadataDuration: number | null = null;
  let resultsEnd: number | null = null;
  let error: string | null = null;
  // Raw audio is timed from its bytes; only container audio needs how far the results reached.
  const needResultsEnd = rawAudioSeconds(0, format) === null;
  return binaryAudioMeter({
    answer(frame) {
      // Most frames are Results: recognised without decoding or parsing them (the hot path of a stream).
      if (frame.includes(RESULTS_TYPE)) {
        if (needResultsEnd) {
          const f = deepgramLiveFrame(frame.toString("utf8"));
          if (f.resultsEnd !== null) resultsEnd = Math.max(resultsEnd ?? 0, f.resultsEnd);
        }
        return true;
      }
      if (frame.includes(METADATA_TYPE)) {
        const f = deepgramLiveFrame(frame.toString("utf8"));
        if (f.metadataDuration !== null) metadataDuration = (metadataDuration ?? 0) + f.metadataDuration;
      }
      // Deepgram's error frame: {"type":"Error","description","message","variant"} (then it closes).
      if (frame.includes(ERROR_TYPE)) {
        const msg = jsonObject(frame.toString("utf8"));
        if (msg?.type === "Error") {
          const words = [msg.description, msg.message].filter((v): v is string => typeof v === "string" && v !== "");
          error = words.length > 0 ? words.join(" — ").slice(0, 2000) : vendorMessage(msg);
        }
      }
      return false;
    },
    units(audioBytes) {
      const seconds = deepgramLiveSeconds({ metadataDuration, audioBytes, resultsEnd }, format);
      return seconds === null ? {} : { audioSeconds: seconds };
    },
    error: () => error,
  });
}

const RESULTS_TYPE = Buffer.from('"Results"');
const METADATA_TYPE = Buffer.from('"Metadata"');
const ERROR_TYPE = Buffer.from('"Error"');

/**
 * Deepgram speak WS: `Speak` messages carry the text; binary frames are the audio. A generation
 * another vendor serves after a failover (`abandon`) bills nothing here.
 */
export function deepgramSpeakMeter(): TtsLegMeter {
  let characters = 0;
  const count = (frame: Buffer, isBinary: boolean) => {
    const t = text(frame, isBinary);
    return t === null ? 0 : deepgramSpeakWsCharacters(t);
  };
  return {
    client(frame, isBinary) {
      const n = count(frame, isBinary);
      characters += n;
      return n > 0;
    },
    upstream: (_frame, isBinary) => isBinary,
    units: () => ({ characters }),
    abandon(_context, frames) {
      for (const f of frames) characters -= count(f, false);
    },
  };
}

/**
 * OpenAI realtime transcription: `input_audio_buffer.append` carries base64 audio in the session's
 * input format (pcm16 at 24 kHz unless a session update says otherwise); completed transcriptions
 * carry `usage.seconds`, which wins when the vendor sent it.
 */
export function realtimeTranscriptionMeter(): StreamMeter {
  let seconds = 0;
  let usageSeconds: number | null = null;
  let inputTokens: number | null = null;
  let outputTokens: number | null = null;
  let error: string | null = null;
  let bytesPerSecond = 48_000;
  return {
    client(frame, isBinary) {
      const t = text(frame, isBinary);
      if (t === null) return false;
      const f = realtimeClientFrame(t);
      const rate = realtimeInputBytesPerSecond(f.inputFormat);
      if (rate !== null) bytesPerSecond = rate;
      seconds += f.audioBytes / bytesPerSecond;
      return f.audioBytes > 0;
    },
    upstream(frame, isBinary) {
      const t = text(frame, isBinary);
      if (t === null) return false;
      const f = realtimeServerFrame(t);
      if (f.usageSeconds !== null) usageSeconds = (usageSeconds ?? 0) + f.usageSeconds;
      if (f.inputTokens !== null) inputTokens = (inputTokens ?? 0) + f.inputTokens;
      if (f.outputTokens !== null) outputTokens = (outputTokens ?? 0) + f.outputTokens;
      if (f.error !== null) error = f.error;
      return f.transcript;
    },
    units(): Units {
      const out: Units = { audioSeconds: usageSeconds ?? seconds };
      if (inputTokens !== null) out.inputTokens = inputTokens;
      if (outputTokens !== null) out.outputTokens = outputTokens;
      return out;
    },
    error: () => error,
  };
}
