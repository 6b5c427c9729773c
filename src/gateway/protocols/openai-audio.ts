import { randomUUID } from "node:crypto";
import { isRecord, jsonObject, openaiTranscriptionUsage, wavSeconds } from "../audio/stt-units.js";
import { realtimeTranscriptionMeter } from "../audio/stream-meters.js";
import { characterCount, openaiSpeechText } from "../audio/tts-units.js";
import { forwardableHeaders, type GatewayErrorCode, type InboundRequest, ProtocolInputError, type ProxyRoute, type Units, type UpstreamTarget } from "../protocol.js";
import type { WsRoute } from "../ws/ws-route.js";
import { forwardQuery } from "../ws/ws-route.js";
import { bufferedJsonMeter, charactersMeter, modelQuery, optionalString, type SpeechState, withModelField } from "./audio-common.js";
import { jsonBoundsProblem } from "../../http/body.js";
import { jsonObjectBody } from "./json-body.js";

type Auth = (t: UpstreamTarget) => Record<string, string>;

interface TranscriptionState {
  parts: Part[];
  model: string | null;
  /** Seconds timed from a WAV upload: the units when the answer carries none (text formats). */
  uploadSeconds: number | null;
}

/**
 * POST /audio/transcriptions (multipart): the model is the `model` field; units are the answer's
 * `usage.seconds` (or verbose_json `duration`), else the WAV upload's own duration. The caller's bytes
 * go upstream untouched unless the model must be rewritten (then the form is re-encoded, the file's
 * bytes unchanged).
 */
export function transcriptionsRoute(auth: Auth): ProxyRoute {
  return {
    kind: "proxy",
    method: "POST",
    path: "/audio/transcriptions",
    modality: "stt",
    parse(inbound) {
      const state = parseTranscription(inbound);
      return { model: state.model, stream: false, state };
    },
    upstreamRequest(inbound, call, target) {
      const state = call.state as TranscriptionState;
      const headers = { ...forwardableHeaders(inbound.headers), ...auth(target) };
      if (state.model === target.modelName) return { method: "POST", path: "/audio/transcriptions", headers, body: inbound.body };
      const { body, contentType } = reencodeForm(state.parts, target.modelName);
      return { method: "POST", path: "/audio/transcriptions", headers: { ...headers, "content-type": contentType }, body };
    },
    meter(call) {
      const state = call.state as TranscriptionState;
      return bufferedJsonMeter((json): Units => {
        const u = openaiTranscriptionUsage(json);
        const seconds = u.seconds ?? state.uploadSeconds;
        const out: Units = {};
        if (seconds !== null) out.audioSeconds = seconds;
        if (u.inputTokens !== null) out.inputTokens = u.inputTokens;
        if (u.outputTokens !== null) out.outputTokens = u.outputTokens;
        return out;
      });
    },
  };
}

/** Reads `model` and the file of a buffered multipart body (RFC 7578); broken framing is a 400. */
function parseTranscription(inbound: InboundRequest): TranscriptionState {
  const type = String(inbound.headers["content-type"] ?? "");
  const boundary = /boundary="?([^";]+)"?/i.exec(type)?.[1];
  if (!type.toLowerCase().startsWith("multipart/form-data") || !boundary) throw new ProtocolInputError("the body must be multipart/form-data with a boundary", 415);
  const parts = splitMultipart(inbound.body, boundary);
  if (parts === null) throw new ProtocolInputError("the multipart body could not be parsed");
  const file = parts.find((p) => p.name === "file" && p.filename !== null);
  if (!file) throw new ProtocolInputError('a file part named "file" is required');
  const model = parts.find((p) => p.name === "model" && p.filename === null)?.body.toString("utf8") ?? null;
  return { parts, model, uploadSeconds: wavSeconds(file.body) };
}

interface Part {
  name: string;
  filename: string | null;
  contentType: string | null;
  body: Buffer;
}

/** Most parts a multipart upload may have (a transcription form has about a dozen fields). */
export const MAX_MULTIPART_PARTS = 100;
/** Largest header block of one part. */
export const MAX_MULTIPART_HEADER_BYTES = 8 * 1024;

/**
 * RFC 7578 parts of a buffered body; null when the framing is broken. More than MAX_MULTIPART_PARTS
 * parts or a part header over MAX_MULTIPART_HEADER_BYTES is refused (ProtocolInputError) as soon as it
 * is seen: 160k tiny parts would otherwise hold the event loop for seconds.
 */
export function splitMultipart(body: Buffer, boundary: string): Part[] | null {
  const delimiter = Buffer.from(`--${boundary}`);
  const nextDelimiter = Buffer.from(`\r\n--${boundary}`);
  const parts: Part[] = [];
  let at = body.indexOf(delimiter);
  if (at < 0) return null;
  for (;;) {
    at += delimiter.length;
    if (body.subarray(at, at + 2).toString() === "--") return parts;
    if (body.subarray(at, at + 2).toString() !== "\r\n") return null;
    if (parts.length === MAX_MULTIPART_PARTS) throw new ProtocolInputError(`the multipart body has more than ${MAX_MULTIPART_PARTS} parts`);
    at += 2;
    const headerEnd = body.indexOf("\r\n\r\n", at);
    if (headerEnd < 0) return null;
    if (headerEnd - at > MAX_MULTIPART_HEADER_BYTES) throw new ProtocolInputError(`a multipart part's headers exceed ${MAX_MULTIPART_HEADER_BYTES} bytes`);
    const head = body.subarray(at, headerEnd).toString("utf8");
    const next = body.indexOf(nextDelimiter, headerEnd + 4);
    if (next < 0) return null;
    const disposition = /content-disposition:\s*form-data;([^\r\n]*)/i.exec(head)?.[1] ?? "";
    const name = /\bname="([^"]*)"/i.exec(disposition)?.[1];
    if (name === undefined) return null;
    const filename = /\bfilename="([^"]*)"/i.exec(disposition)?.[1] ?? null;
    const contentType = /content-type:\s*([^\r\n]+)/i.exec(head)?.[1]?.trim() ?? null;
    parts.push({ name, filename, contentType, body: body.subarray(headerEnd + 4, next) });
    at = next + 2;
  }
}

/** The parts with `model` replaced, encoded as multipart with a fresh boundary (file bytes as they came). */
function reencodeForm(parts: Part[], modelName: string): { body: Buffer; contentType: string } {
  const boundary = `voxgate-${randomUUID()}`;
  const chunks: Buffer[] = [];
  const esc = (s: string) => s.replace(/"/g, "%22").replace(/\r|\n/g, " ");
  let modelSeen = false;
  for (const p of parts) {
    const isModel = p.name === "model" && p.filename === null;
    modelSeen ||= isModel;
    const filename = p.filename === null ? "" : `; filename="${esc(p.filename)}"`;
    const type = p.contentType ? `\r\nContent-Type: ${p.contentType}` : "";
    chunks.push(Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${esc(p.name)}"${filename}${type}\r\n\r\n`));
    chunks.push(isModel ? Buffer.from(modelName) : p.body);
    chunks.push(Buffer.from("\r\n"));
  }
  if (!modelSeen) chunks.push(Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="model"\r\n\r\n${modelName}\r\n`));
  chunks.push(Buffer.from(`--${boundary}--\r\n`));
  return { body: Buffer.concat(chunks), contentType: `multipart/form-data; boundary=${boundary}` };
}

/** POST /audio/speech: `{"model", "input", "voice"}` → streamed audio, billed by the characters of input. */
export function speechRoute(auth: Auth): ProxyRoute {
  return {
    kind: "proxy",
    method: "POST",
    path: "/audio/speech",
    modality: "tts",
    parse(inbound) {
      const json = jsonObjectBody(inbound.body);
      const text = openaiSpeechText(json);
      if (text === null) throw new ProtocolInputError('"input" must be a string');
      const state: SpeechState = { json, characters: characterCount(text) };
      return { model: optionalString(json, "model"), stream: true, state, estimate: { characters: state.characters } };
    },
    upstreamRequest(inbound, call, target) {
      const state = call.state as SpeechState;
      return {
        method: "POST",
        path: "/audio/speech",
        headers: { ...forwardableHeaders(inbound.headers), "content-type": "application/json", ...auth(target) },
        body: withModelField(inbound.body, state.json, "model", target.modelName),
      };
    },
    meter: charactersMeter,
  };
}

/**
 * WebSocket /realtime?intent=transcription: the model is on the URL (`model`, as the LiveKit plugin
 * sends it off api.openai.com) or named by the first `session.update` (the AI SDK names it only
 * there): without one on the URL the upgrade completes first and that message (or the first audio,
 * with the project's default_stack) picks it. A session update naming the stream's model is rewritten
 * to the vendor's name; one naming another model is answered with a realtime `error` event, not sent.
 */
export function realtimeRoute(auth: Auth): WsRoute {
  return {
    path: "/realtime",
    modality: "stt",
    accepts: (query) => query.get("intent") === "transcription",
    model: (inbound) => modelQuery(inbound),
    upstream: (inbound, target) => ({
      path: `/realtime${forwardQuery(inbound.query, { model: target.modelName })}`,
      headers: { ...auth(target), ...(inbound.headers["openai-beta"] ? { "openai-beta": String(inbound.headers["openai-beta"]) } : {}) },
    }),
    meter: () => realtimeTranscriptionMeter(),
    clientText: (target, models) => (frame) => {
      const named = sessionTranscriptionModel(frame);
      if (named === null || named === target.modelName || named === target.modelId) return rewriteSessionModel(frame, target.modelName);
      const r = models.resolve(named);
      if (r.ok && r.target.modelId === target.modelId) return rewriteSessionModel(frame, target.modelName);
      models.refuse(frame, named, r.ok ? "invalid_request" : r.code, r.ok ? `this stream transcribes with ${target.modelId}: open another stream for ${r.target.modelId}` : r.message);
      return null;
    },
    inBand: {
      named: sessionTranscriptionModel,
      work: (frame, isBinary) => !isBinary && frame.includes("input_audio_buffer.append"),
      error: realtimeErrorEvent,
    },
  };
}

/** The transcription model a session update names (beta `input_audio_transcription` or GA `audio.input.transcription`), else null. */
export function sessionTranscriptionModel(frame: string): string | null {
  if (!frame.includes("session.update")) return null;
  const msg = jsonObject(frame);
  const s = msg?.session;
  if (!isRecord(s)) return null;
  const beta = s.input_audio_transcription;
  const ga = isRecord(s.audio) && isRecord(s.audio.input) ? s.audio.input.transcription : undefined;
  for (const t of [beta, ga]) if (isRecord(t) && typeof t.model === "string") return t.model;
  return null;
}

/** OpenAI's realtime `error` event answering a client event (its event_id echoed). */
export function realtimeErrorEvent(frame: string | null, code: GatewayErrorCode, message: string): string {
  const eventId = frame === null ? undefined : jsonObject(frame)?.event_id;
  const type = code === "model_not_found" || code === "invalid_request" ? "invalid_request_error" : code === "budget_exceeded" ? "insufficient_quota" : "server_error";
  return JSON.stringify({
    type: "error",
    event_id: `event_voxgate_${randomUUID().replaceAll("-", "").slice(0, 20)}`,
    error: { type, code, message, param: null, event_id: typeof eventId === "string" ? eventId : null },
  });
}

/** A session update's transcription model set to the routed model's name (other frames untouched). */
export function rewriteSessionModel(frame: string, modelName: string): string {
  if (!frame.includes("session.update") || jsonBoundsProblem(frame)) return frame;
  try {
    const msg = JSON.parse(frame) as { type?: unknown; session?: Record<string, unknown> };
    if (typeof msg.session !== "object" || msg.session === null) return frame;
    const s = msg.session;
    const beta = s.input_audio_transcription as Record<string, unknown> | undefined;
    const ga = ((s.audio as Record<string, unknown> | undefined)?.input as Record<string, unknown> | undefined)?.transcription as Record<string, unknown> | undefined;
    let changed = false;
    for (const t of [beta, ga]) {
      if (t && typeof t === "object" && typeof t.model === "string" && t.model !== modelName) {
        t.model = modelName;
        changed = true;
      }
    }
    return changed ? JSON.stringify(msg) : frame;
  } catch {
    return frame;
  }
}
