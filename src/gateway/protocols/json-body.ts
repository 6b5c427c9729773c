import { jsonBoundsProblem } from "../../http/body.js";
import { type InboundRequest, type Meter, type ParsedCall, ProtocolInputError, type ProxyRoute, type Units, type UpstreamTarget } from "../protocol.js";

/** A JSON request body that must be an object; malformed or another type is a 400, never a 500. */
export function jsonObjectBody(body: Buffer): Record<string, unknown> {
  if (body.byteLength === 0) throw new ProtocolInputError("request body is empty; a JSON object is expected");
  const problem = jsonBoundsProblem(body);
  if (problem) throw new ProtocolInputError(`request body refused: ${problem}`);
  let json: unknown;
  try {
    json = JSON.parse(body.toString("utf8"));
  } catch {
    throw new ProtocolInputError("request body is not valid JSON");
  }
  if (json === null || typeof json !== "object" || Array.isArray(json)) throw new ProtocolInputError("request body must be a JSON object");
  return json as Record<string, unknown>;
}

/** `"model"` as bytes. With both quotes unescaped it can only be a key or the string "model", never inside a string. */
const MODEL_KEY = Buffer.from('"model"');
const isJsonSpace = (b: number | undefined) => b === 0x20 || b === 0x0a || b === 0x0d || b === 0x09;

/**
 * Where the value of a key found in JSON bytes starts: `keyEnd` is the byte after the key's closing
 * quote; JSON whitespace, a colon and whitespace are skipped. -1 when no colon follows (not a key).
 */
export function valueAfterKey(body: Buffer, keyEnd: number): number {
  let i = keyEnd;
  while (isJsonSpace(body[i])) i++;
  if (body[i] !== 0x3a /* ':' */) return -1;
  i++;
  while (isJsonSpace(body[i])) i++;
  return i;
}

/**
 * A string as its JSON bytes. Model names recur on every call, so short ones are encoded once (at most
 * 256 kept; by the time a body is spliced its model was resolved, so they are configured names).
 */
const jsonBytesCache = new Map<string, Buffer>();
function jsonBytes(value: string): Buffer {
  if (value.length > 256) return Buffer.from(JSON.stringify(value));
  let bytes = jsonBytesCache.get(value);
  if (!bytes) {
    bytes = Buffer.from(JSON.stringify(value));
    if (jsonBytesCache.size >= 256) jsonBytesCache.clear();
    jsonBytesCache.set(value, bytes);
  }
  return bytes;
}

/** The byte span of the value of the one `"model": <value>` pair whose value is `value` as JSON; null unless exactly one. */
function modelValueSpan(raw: Buffer, value: Buffer): [number, number] | null {
  let found: [number, number] | null = null;
  for (let at = raw.indexOf(MODEL_KEY); at >= 0; at = raw.indexOf(MODEL_KEY, at + 1)) {
    const i = valueAfterKey(raw, at + MODEL_KEY.length);
    if (i < 0) continue;
    if (i + value.length > raw.length || raw.compare(value, 0, value.length, i, i + value.length) !== 0) continue;
    if (found) return null;
    found = [i, i + value.length];
  }
  return found;
}

/**
 * The body with `model` set to the vendor's model name and `add` merged in at the top level, touching
 * the caller's bytes as little as possible: unchanged when nothing changes, a splice of the one model
 * value and an insertion of new keys in the common case, a full re-serialisation only when a key to add
 * already exists or the model value is not found exactly once. Spliced as bytes: a voice agent's LLM
 * call carries its whole conversation (tens of KB), and decoding it to text, searching it with a
 * regex and encoding it again cost ~20 us per 33 KB before the upstream request could start.
 */
export function withModel(raw: Buffer, json: Record<string, unknown>, modelName: string, add: Record<string, unknown>): Buffer | string {
  const addKeys = Object.keys(add);
  const modelOk = json.model === modelName;
  if (modelOk && addKeys.length === 0) return raw;
  if (addKeys.some((k) => k in json)) return JSON.stringify({ ...json, ...add, model: modelName });
  const parts: Buffer[] = [];
  let from = 0;
  if (addKeys.length > 0) {
    const open = raw.indexOf(0x7b /* '{' */) + 1;
    parts.push(raw.subarray(0, open), Buffer.from(addKeys.map((k) => `${JSON.stringify(k)}:${JSON.stringify(add[k])},`).join("")));
    from = open;
  }
  if (!modelOk) {
    if (typeof json.model !== "string") return JSON.stringify({ ...json, ...add, model: modelName });
    const span = modelValueSpan(raw, jsonBytes(json.model));
    if (span === null) return JSON.stringify({ ...json, ...add, model: modelName });
    parts.push(raw.subarray(from, span[0]), jsonBytes(modelName));
    from = span[1];
  }
  parts.push(raw.subarray(from));
  return Buffer.concat(parts);
}

/** Characters of a message's content: a string, or the `text` of its parts (images and audio count 0). */
export function contentChars(content: unknown): number {
  if (typeof content === "string") return content.length;
  if (!Array.isArray(content)) return 0;
  let n = 0;
  for (const part of content) {
    const text = (part as { text?: unknown } | null)?.text;
    if (typeof text === "string") n += text.length;
  }
  return n;
}

/** A max_tokens-like field when it is a positive integer, else undefined (the vendor judges bad values). */
export function maxTokens(v: unknown): number | undefined {
  return typeof v === "number" && Number.isSafeInteger(v) && v > 0 ? v : undefined;
}

/**
 * The meter of a JSON answer: a success body is kept (answers are small) and read by `units` once it
 * is complete; a refused or cut-off answer bills nothing. Each protocol gives only its usage reader.
 */
export function jsonAnswerMeter(units: (body: Buffer) => Units): Meter {
  return new JsonAnswerMeter(units);
}

/** jsonAnswerMeter's meter: one object per call, no closures. */
class JsonAnswerMeter implements Meter {
  private readonly chunks: Buffer[] = [];
  private ok = true;
  constructor(private readonly read: (body: Buffer) => Units) {}
  headers(status: number): void {
    this.ok = status < 300;
  }
  chunk(chunk: Buffer): boolean {
    if (this.ok) this.chunks.push(chunk);
    return true;
  }
  units(complete: boolean): Units {
    if (!this.ok || !complete) return {};
    const { chunks } = this;
    return this.read(chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks));
  }
}

/** A top-level field of a JSON body, parsed; undefined when the body does not parse. */
export function parsedField(body: Buffer, key: string): unknown {
  try {
    return (JSON.parse(body.toString("utf8")) as Record<string, unknown> | null)?.[key];
  } catch {
    return undefined;
  }
}

/** What differs between the LLM APIs that take a JSON body naming the model (chat completions, responses, messages). */
export interface LlmJsonApi {
  path: string;
  /** Reads the call; its state carries the parsed body as `json`. */
  parse(inbound: InboundRequest): ParsedCall;
  /** The headers after content-type and accept: the provider's auth and the vendor's own. */
  headers(call: ParsedCall, target: UpstreamTarget): Record<string, string>;
  /** Fields to merge into the body besides the model (chat streams: the usage block asked for). */
  add?(call: ParsedCall): Record<string, unknown> | undefined;
  /** The meter of a streamed (SSE) answer. */
  sseMeter(call: ParsedCall): Meter;
  /** The units of a complete JSON answer. */
  jsonUsage(body: Buffer): Units;
}

const NO_FIELDS: Record<string, unknown> = Object.freeze({});

/**
 * POST `path` of an LLM JSON API, sent on to the same path: the caller's body with the vendor's model
 * name (withModel: a splice of the bytes), JSON or SSE asked for as the caller did, metered by the
 * API's own readers.
 */
export function llmJsonRoute(api: LlmJsonApi): ProxyRoute {
  const { path, sseMeter, jsonUsage } = api;
  return {
    kind: "proxy",
    method: "POST",
    path,
    modality: "llm",
    parse: api.parse,
    upstreamRequest: (inbound, call, target) => ({
      method: "POST",
      path,
      headers: { "content-type": "application/json", accept: call.stream ? "text/event-stream" : "application/json", ...api.headers(call, target) },
      body: withModel(inbound.body, (call.state as { json: Record<string, unknown> }).json, target.modelName, api.add?.(call) ?? NO_FIELDS),
    }),
    meter: (call) => (call.stream ? sseMeter(call) : jsonAnswerMeter(jsonUsage)),
  };
}
