import { ProtocolInputError } from "../protocol.js";

/** A JSON request body that must be an object; malformed or another type is a 400, never a 500. */
export function jsonObjectBody(body: Buffer): Record<string, unknown> {
  if (body.byteLength === 0) throw new ProtocolInputError("request body is empty; a JSON object is expected");
  let json: unknown;
  try {
    json = JSON.parse(body.toString("utf8"));
  } catch {
    throw new ProtocolInputError("request body is not valid JSON");
  }
  if (json === null || typeof json !== "object" || Array.isArray(json)) throw new ProtocolInputError("request body must be a JSON object");
  return json as Record<string, unknown>;
}

const escapeRe = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

/** `"model": "<value>"` patterns by value: a model name recurs on every call, compile it once (bounded). */
const modelPatterns = new Map<string, RegExp>();
const MODEL_PATTERN_LIMIT = 256;
function modelPattern(value: string): RegExp {
  let re = modelPatterns.get(value);
  if (!re) {
    re = new RegExp(`"model"\\s*:\\s*${escapeRe(JSON.stringify(value))}`, "g");
    if (modelPatterns.size >= MODEL_PATTERN_LIMIT) modelPatterns.clear();
    modelPatterns.set(value, re);
  }
  return re;
}

/**
 * The body with `model` set to the vendor's model name and `add` merged in at the top level, touching
 * the caller's bytes as little as possible: unchanged when nothing changes, a splice of the one model
 * value and an insertion of new keys in the common case, a full re-serialisation only when a key to add
 * already exists or the model value is not found exactly once.
 */
export function withModel(raw: Buffer, json: Record<string, unknown>, modelName: string, add: Record<string, unknown>): Buffer | string {
  const addKeys = Object.keys(add);
  const modelOk = json.model === modelName;
  if (modelOk && addKeys.length === 0) return raw;
  if (addKeys.some((k) => k in json)) return JSON.stringify({ ...json, ...add, model: modelName });
  let text = raw.toString("utf8");
  if (!modelOk) {
    if (typeof json.model !== "string") return JSON.stringify({ ...json, ...add, model: modelName });
    const re = modelPattern(json.model);
    const matches = text.match(re);
    if (matches?.length !== 1) return JSON.stringify({ ...json, ...add, model: modelName });
    text = text.replace(re, () => `"model":${JSON.stringify(modelName)}`);
  }
  if (addKeys.length > 0) {
    const open = text.indexOf("{");
    const inserted = addKeys.map((k) => `${JSON.stringify(k)}:${JSON.stringify(add[k])},`).join("");
    text = `${text.slice(0, open + 1)}${inserted}${text.slice(open + 1)}`;
  }
  return text;
}
