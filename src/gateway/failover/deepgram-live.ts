import { deepgramAudioFormat, jsonObject, rawBytesPerSecond } from "../audio/stt-units.js";
import type { UpstreamTarget } from "../protocol.js";
import { deepgramResultSpan, type ResultSpan, shiftDeepgramResult } from "./transcripts.js";

/**
 * How a live STT protocol's frames are read across a failover seam (src/gateway/failover/legs.ts).
 * Only what a seam needs: where the client's audio is in time, which vendor frames are finals, and a
 * new leg's results moved onto the client's timeline.
 */
export interface LiveSttWire {
  /** Bytes per second of the client's audio: failover needs raw audio to place vendor times in it. */
  bytesPerSecond: number;
  /** A cheap test (no parsing) for a vendor frame that may be a final result: false for most frames. */
  maybeFinal(frame: Buffer, isBinary: boolean): boolean;
  /**
   * A result frame moved `offset` seconds later and its span there; a frame that is only moved (a
   * speech event) has no span; null for any other frame.
   */
  result(frame: Buffer, isBinary: boolean, offset: number): { frame: Buffer; span: ResultSpan | null } | null;
  /** A client frame after which the vendor closes normally (the stream is ending, not failing). */
  closing(frame: Buffer | string, isBinary: boolean): boolean;
  /**
   * A protocol whose audio is not its binary frames (OpenAI's base64 `input_audio_buffer.append`):
   * the audio bytes a client frame carries (0: none), and whether such frames are binary. Absent:
   * binary frames are the audio.
   */
  audio?: { bytes(frame: Buffer | string, isBinary: boolean): number; binary: boolean };
  /** A protocol that sets its stream up in messages: what a new leg is sent first (the client's session, with `target`'s model). */
  opening?(target: UpstreamTarget): string[];
  /** A client text frame as the leg on `target` must get it (a model it names rewritten to the leg's). */
  forLeg?(frame: string, target: UpstreamTarget): string;
  /**
   * Whether a vendor frame that set its meter's error fails the leg (absent: every such error does).
   * OpenAI answers a client's invalid event with an `error` and goes on: only its own failures count.
   */
  fatal?(frame: Buffer): boolean;
  /**
   * The vendor sends nothing while nobody speaks (OpenAI; Deepgram answers every few hundred ms): the
   * stall clock pings its socket and counts the pongs, so silence fails no healthy vendor.
   */
  quiet?: boolean;
  /** False once the stream cannot be replayed to another leg (an OpenAI session switched to g711). */
  servable?(): boolean;
}

const IS_FINAL = Buffer.from('"is_final":true');
const RESULTS = Buffer.from('"Results"');

/**
 * Deepgram's live `listen` protocol, for a stream whose audio is raw (linear16, mulaw, alaw…): null
 * for containers (Opus, WebM…), whose bytes cannot be placed in time nor resumed on another vendor
 * mid-stream, so such a stream fails over only at connect.
 */
export function deepgramLiveWire(query: URLSearchParams): LiveSttWire | null {
  const f = deepgramAudioFormat(query);
  // Multichannel results carry a channel index each: their seam is not handled, they fail over at connect only.
  if (f.multichannel) return null;
  const bytesPerSecond = rawBytesPerSecond(f.encoding, f.sampleRate, f.channels);
  if (bytesPerSecond === null) return null;
  return {
    bytesPerSecond,
    maybeFinal: (frame, isBinary) => !isBinary && frame.includes(IS_FINAL),
    result(frame, isBinary, offset) {
      if (isBinary || !frame.includes(RESULTS)) return null;
      const msg = jsonObject(frame.toString("utf8"));
      const span = deepgramResultSpan(msg);
      if (msg === null || span === null) return null;
      if (offset === 0) return { frame, span };
      const moved = shiftDeepgramResult(msg, offset);
      return { frame: Buffer.from(JSON.stringify(moved)), span: { start: span.start + offset, end: span.end + offset, isFinal: span.isFinal } };
    },
    closing: (frame, isBinary) => !isBinary && frame.includes("CloseStream"),
  };
}
