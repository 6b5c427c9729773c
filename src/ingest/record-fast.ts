import { isStorableText, MAX_EPOCH_MS, MAX_FUTURE_SKEW_MS, MAX_ID_LENGTH, MAX_TEXT_LENGTH, MIN_EPOCH_MS, SECONDS_MS_BOUNDARY, UUID_RE } from "./fields.js";
import type { RequestRecord } from "./records.js";

/**
 * The common case of requestRecordSchema without zod: a hand-written check of a well-formed record
 * (zod costs ≈ 10% of the collector's CPU per batch). It answers the record exactly as the schema
 * would parse it, or null whenever anything is unusual or wrong; the caller then runs the schema,
 * which decides and words the reason. So it may only ever be stricter than the schema, never laxer
 * (test/ingest/record-fast.test.ts checks both agree on valid and invalid records).
 */
export function fastRecord(raw: unknown, now = Date.now()): RequestRecord | null {
  if (raw === null || typeof raw !== "object" || Object.getPrototypeOf(raw) !== Object.prototype) return null;
  const o = raw as Record<string, unknown>;
  const { id, modality, model_id } = o;
  if (typeof id !== "string" || !UUID_RE.test(id)) return null;
  if (modality !== "stt" && modality !== "llm" && modality !== "tts") return null;
  if (!isShortText(model_id)) return null;
  const timestamp = timestampOf(o.timestamp, now);
  if (!timestamp) return null;
  const status = o.status;
  if (status != null && status !== "success" && status !== "error" && status !== "fallback") return null;
  const errorMessage = o.error_message;
  if (errorMessage != null && !(typeof errorMessage === "string" && errorMessage.length <= MAX_TEXT_LENGTH && isStorableText(errorMessage))) return null;
  for (const key of SHORT_TEXT_KEYS) if (o[key] != null && !isShortText(o[key])) return null;
  for (const key of NON_NEGATIVE_KEYS) if (o[key] != null && !isNonNegative(o[key], Number.POSITIVE_INFINITY)) return null;
  if (o.cost_usd != null && !isNonNegative(o.cost_usd, 1e9)) return null;
  for (const key of COUNT_KEYS) if (o[key] != null && !isNonNegative(o[key], Number.MAX_SAFE_INTEGER)) return null;
  for (const key of INT53_KEYS) if (o[key] != null && !(Number.isSafeInteger(o[key]) && (o[key] as number) >= 0)) return null;
  if (o.is_probe != null && typeof o.is_probe !== "boolean") return null;
  if (o.turn_index != null && !(Number.isSafeInteger(o.turn_index) && (o.turn_index as number) >= 0 && (o.turn_index as number) <= 2_147_483_647)) return null;
  if (o.revision != null && !isShortText(o.revision) && !(Number.isSafeInteger(o.revision) && (o.revision as number) >= 0)) return null;
  // metadata: only absent/null here; any object goes through the schema (copy, size and text checks).
  if (o.metadata != null) return null;

  const record: RequestRecord = { id, timestamp, modality, model_id };
  for (const key of PASSED_KEYS) if (key in o) (record as Record<string, unknown>)[key] = o[key];
  return record;
}

const SHORT_TEXT_KEYS = ["fallback_from", "provider", "project", "session_id", "room_name", "agent_id", "pricing_source"] as const;
const NON_NEGATIVE_KEYS = ["ttfb_ms", "total_latency_ms", "audio_seconds"] as const;
const COUNT_KEYS = ["input_units", "output_units", "cached_input_units"] as const;
const INT53_KEYS = ["input_tokens", "output_tokens", "cached_input_tokens", "characters"] as const;
/** Optional keys copied as given (already checked above); absent keys stay absent, as zod leaves them. */
const PASSED_KEYS = ["status", "error_message", ...SHORT_TEXT_KEYS, ...NON_NEGATIVE_KEYS, "cost_usd", ...COUNT_KEYS, ...INT53_KEYS, "metadata", "is_probe", "revision", "turn_index"] as const;

/** Every record key the fast path checks; a schema key outside it makes the caller use the schema. */
export const FAST_RECORD_KEYS: ReadonlySet<string> = new Set(["id", "timestamp", "modality", "model_id", ...PASSED_KEYS]);

function isShortText(v: unknown): v is string {
  return typeof v === "string" && v.length >= 1 && v.length <= MAX_ID_LENGTH && isStorableText(v);
}

function isNonNegative(v: unknown, max: number): boolean {
  return typeof v === "number" && Number.isFinite(v) && v >= 0 && v <= max;
}

/** flexibleTimestamp's transform for an in-range value; null for anything it would refuse. */
function timestampOf(v: unknown, now: number): Date | null {
  let ms: number;
  if (typeof v === "number") {
    if (!Number.isFinite(v)) return null;
    ms = Math.abs(v) < SECONDS_MS_BOUNDARY ? v * 1000 : v;
  } else if (typeof v === "string" && v.length <= 64) ms = Date.parse(v);
  else return null;
  // A margin of a minute inside the window: at its very edge the schema decides (clock read later).
  if (!Number.isFinite(ms) || ms < MIN_EPOCH_MS || ms > Math.min(MAX_EPOCH_MS, now + MAX_FUTURE_SKEW_MS - 60_000)) return null;
  return new Date(Math.round(ms));
}
