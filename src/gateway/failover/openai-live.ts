import { decodedBase64Length, jsonObject, realtimeInputBytesPerSecond } from "../audio/stt-units.js";
import { realtimeEventType } from "../protocols/openai-realtime.js";
import { rewriteSessionModel, sessionTranscriptionModel } from "../protocols/openai-audio.js";
import type { LiveSttWire } from "./deepgram-live.js";

/** OpenAI realtime transcription's default input: pcm16 mono at 24 kHz. */
const PCM16_24K = 48_000;
const APPEND = "input_audio_buffer.append";
const AUDIO_KEY = '"audio"';

/** The base64 audio of an `input_audio_buffer.append` frame, found without parsing the frame. */
function appendedBytes(text: string): number {
  const key = text.indexOf(AUDIO_KEY);
  if (key < 0) return 0;
  const open = text.indexOf('"', key + AUDIO_KEY.length);
  const close = open < 0 ? -1 : text.indexOf('"', open + 1);
  return close < 0 ? 0 : decodedBase64Length(text.slice(open + 1, close));
}

/**
 * OpenAI's realtime transcription protocol across a failover seam (src/gateway/failover/legs.ts),
 * for a session of pcm16 at 24 kHz (the default, and what the SDKs send): the audio is the base64 of
 * `input_audio_buffer.append` text frames; a result's place in time is its item's
 * `input_audio_buffer.speech_started` / `speech_stopped` (ms into the leg's audio), so those events
 * are read on every leg and moved onto the client's timeline on later ones, and the transcription
 * deltas and completions take their item's span. A new leg is first sent the client's latest session
 * update, its transcription model set to the leg's own. A session switched to another input format
 * (g711) is no longer replayable: it fails as it would without failover.
 */
export function openaiRealtimeWire(): LiveSttWire {
  /** Items' spans on the client's timeline (seconds), from their speech events. */
  const items = new Map<string, { start: number; end: number | null }>();
  let session: string | null = null;
  let pcm16 = true;
  const itemId = (msg: Record<string, unknown>) => (typeof msg.item_id === "string" ? msg.item_id : "");
  const ms = (v: unknown) => (typeof v === "number" && Number.isFinite(v) ? v : 0);
  return {
    bytesPerSecond: PCM16_24K,
    maybeFinal: (frame, isBinary) => !isBinary && (frame.includes("speech_st") || frame.includes("transcription.completed")),
    result(frame, isBinary, offset) {
      if (isBinary) return null;
      const type = realtimeEventType(frame);
      if (type !== "input_audio_buffer.speech_started" && type !== "input_audio_buffer.speech_stopped" && type !== "conversation.item.input_audio_transcription.delta" && type !== "conversation.item.input_audio_transcription.completed") return null;
      const msg = jsonObject(frame.toString("utf8"));
      if (msg === null) return null;
      const id = itemId(msg);
      if (type === "input_audio_buffer.speech_started") {
        items.set(id, { start: ms(msg.audio_start_ms) / 1000 + offset, end: null });
        return { frame: offset === 0 ? frame : Buffer.from(JSON.stringify({ ...msg, audio_start_ms: ms(msg.audio_start_ms) + offset * 1000 })), span: null };
      }
      if (type === "input_audio_buffer.speech_stopped") {
        const item = items.get(id);
        if (item) item.end = ms(msg.audio_end_ms) / 1000 + offset;
        return { frame: offset === 0 ? frame : Buffer.from(JSON.stringify({ ...msg, audio_end_ms: ms(msg.audio_end_ms) + offset * 1000 })), span: null };
      }
      // A transcript of an item whose speech was not timed (VAD off) has no span: it passes ungated.
      const item = items.get(id);
      if (!item) return null;
      const isFinal = type === "conversation.item.input_audio_transcription.completed";
      if (isFinal) items.delete(id);
      return { frame, span: { start: item.start, end: item.end ?? item.start, isFinal } };
    },
    closing: () => false,
    quiet: true,
    audio: {
      binary: false,
      bytes(frame, isBinary) {
        if (isBinary) return 0;
        const text = typeof frame === "string" ? frame : frame.toString("utf8");
        if (text.includes(APPEND)) return appendedBytes(text);
        if (text.includes("session.update")) {
          session = text;
          const msg = jsonObject(text);
          const s = msg?.session as { input_audio_format?: unknown; audio?: { input?: { format?: unknown } } } | undefined;
          const format = s?.input_audio_format ?? s?.audio?.input?.format;
          if (format !== undefined) pcm16 = realtimeInputBytesPerSecond(format) === PCM16_24K;
        }
        return 0;
      },
    },
    opening: (target) => (session === null ? [] : [rewriteSessionModel(session, target.modelName)]),
    forLeg: (frame, target) => (sessionTranscriptionModel(frame) === null ? frame : rewriteSessionModel(frame, target.modelName)),
    fatal(frame) {
      if (realtimeEventType(frame) !== "error") return false;
      const err = jsonObject(frame.toString("utf8"))?.error as { type?: unknown } | undefined;
      return err?.type !== "invalid_request_error";
    },
    servable: () => pcm16,
  };
}
