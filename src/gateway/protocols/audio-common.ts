import { jsonObject } from "../audio/stt-units.js";
import { type InboundRequest, type Meter, type ParsedCall, ProtocolInputError, type Units } from "../protocol.js";

/** Largest answer body a meter keeps to read its usage (transcripts are small; beyond this, no usage). */
export const MAX_METERED_ANSWER_BYTES = 4 * 1024 * 1024;

/** The `model` query parameter (Deepgram, ElevenLabs WS, OpenAI realtime); null when absent. */
export function modelQuery(inbound: InboundRequest, name = "model"): string | null {
  const m = inbound.query.get(name);
  if (m === null || m === "") return null;
  if (m.length > 400) throw new ProtocolInputError(`${name} is too long`);
  return m;
}

/** A string field of a JSON body that may be absent; any other type is a 400. */
export function optionalString(json: Record<string, unknown>, field: string): string | null {
  const v = json[field];
  if (v === undefined || v === null) return null;
  if (typeof v !== "string") throw new ProtocolInputError(`${field} must be a string`);
  return v;
}

/**
 * A meter for a JSON answer read at its end (transcriptions): keeps the body (bounded), then asks
 * `read` for the units. A non-JSON answer (text formats) is read as null. An error answer has no units.
 */
export function bufferedJsonMeter(read: (json: Record<string, unknown> | null) => Units): Meter {
  const chunks: Buffer[] = [];
  let size = 0;
  let status = 200;
  return {
    headers(s) {
      status = s;
    },
    chunk(buf) {
      size += buf.byteLength;
      if (size <= MAX_METERED_ANSWER_BYTES) chunks.push(buf);
      return true;
    },
    units(complete) {
      if (status >= 400) return {};
      const json = complete && size <= MAX_METERED_ANSWER_BYTES ? jsonObject(Buffer.concat(chunks).toString("utf8")) : null;
      return read(json);
    },
  };
}

/** What parse keeps for a TTS call: the JSON body (to rewrite its model) and the characters of its text. */
export interface SpeechState {
  json: Record<string, unknown>;
  characters: number;
}

/** A TTS answer: every audio byte passes; the units are the request's characters once the vendor accepted it. */
export function charactersMeter(call: ParsedCall): Meter {
  let ok = false;
  return {
    headers(status) {
      ok = status < 400;
    },
    chunk: () => true,
    units: () => (ok ? { characters: (call.state as SpeechState).characters } : {}),
  };
}

/** The body with `field` set to the vendor's model name: the caller's bytes when already so. */
export function withModelField(raw: Buffer, json: Record<string, unknown>, field: string, modelName: string): Buffer | string {
  return json[field] === modelName ? raw : JSON.stringify({ ...json, [field]: modelName });
}
