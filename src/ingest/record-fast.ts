import { isStorableText, MAX_EPOCH_MS, MAX_FUTURE_SKEW_MS, MAX_ID_LENGTH, MAX_TEXT_LENGTH, MIN_EPOCH_MS, SECONDS_MS_BOUNDARY, UUID_RE } from "./fields.js";

/**
 * The common case of requestRecordSchema without zod: a hand-written check of a well-formed record
 * (zod costs ≈ 10% of the collector's CPU per batch). It answers the record exactly as the schema
 * would parse it, or null whenever anything is unusual or wrong; the caller then runs the schema,
 * which decides and words the reason. So it may only ever be stricter than the schema, never laxer
 * (test/ingest/record-fast.test.ts checks both agree on valid and invalid records).
 * `R` is the schema's record type (records.ts passes RequestRecord; this module does not import it,
 * which would close an import cycle).
 */
export function fastRecord<R extends FastRecordCore>(raw: unknown, now = Date.now()): R | null {
  if (raw === null || typeof raw !== "object" || Object.getPrototypeOf(raw) !== Object.prototype) return null;
  const o = raw as Record<string, unknown>;
  const { id, modality, model_id } = o;
  if (typeof id !== "string" || !UUID_RE.test(id)) return null;
  if (modality !== "stt" && modality !== "llm" && modality !== "tts") return null;
  if (!isShortText(model_id)) return null;
  const timestamp = timestampOf(o.timestamp, now);
  if (!timestamp) return null;
  const record = { id, timestamp, modality, model_id } as R;
  // One pass over the keys the record has (a gateway record has ~10 of the 30 optional ones): each is
  // checked by its rule and copied as given; unknown keys are dropped, as zod drops them. Looking up
  // every optional key by name instead was ~10 % of ingest's CPU (megamorphic keyed loads).
  for (const key in o) {
    const check = OPTIONAL_CHECKS.get(key);
    if (check === undefined) continue;
    const v = o[key];
    if (v != null && !check(v)) return null;
    (record as Record<string, unknown>)[key] = v;
  }
  return record;
}

/** The fields every record has. */
interface FastRecordCore {
  id: string;
  timestamp: NonNullable<ReturnType<typeof timestampOf>>;
  modality: "stt" | "llm" | "tts";
  model_id: string;
}

const SHORT_TEXT_KEYS = ["fallback_from", "provider", "project", "session_id", "room_name", "agent_id", "pricing_source"] as const;
const NON_NEGATIVE_KEYS = ["ttfb_ms", "total_latency_ms", "audio_seconds"] as const;
const COUNT_KEYS = ["input_units", "output_units", "cached_input_units"] as const;
const INT53_KEYS = ["input_tokens", "output_tokens", "cached_input_tokens", "input_audio_tokens", "output_audio_tokens", "characters"] as const;

type Check = (v: unknown) => boolean;
const isNonNegativeFinite: Check = (v) => isNonNegative(v, Number.POSITIVE_INFINITY);
const isCount: Check = (v) => isNonNegative(v, Number.MAX_SAFE_INTEGER);
const isInt53: Check = (v) => Number.isSafeInteger(v) && (v as number) >= 0;

/**
 * The rule of each optional key for a value that is not null/undefined (those are copied as given).
 * `metadata` never passes: any object goes through the schema (copy, size and text checks).
 */
const OPTIONAL_CHECKS = new Map<string, Check>([
  ["status", (v) => v === "success" || v === "error" || v === "fallback"],
  ["error_message", (v) => typeof v === "string" && v.length <= MAX_TEXT_LENGTH && isStorableText(v)],
  ...SHORT_TEXT_KEYS.map((k) => [k, isShortText] as const),
  ...NON_NEGATIVE_KEYS.map((k) => [k, isNonNegativeFinite] as const),
  ["cost_usd", (v) => isNonNegative(v, 1e9)],
  ...COUNT_KEYS.map((k) => [k, isCount] as const),
  ...INT53_KEYS.map((k) => [k, isInt53] as const),
  ["metadata", () => false],
  ["is_probe", (v) => typeof v === "boolean"],
  ["revision", (v) => isShortText(v) || isInt53(v)],
  ["turn_index", (v) => Number.isSafeInteger(v) && (v as number) >= 0 && (v as number) <= 2_147_483_647],
]);

/** Every record key the fast path checks; a schema key outside it makes the caller use the schema. */
export const FAST_RECORD_KEYS: ReadonlySet<string> = new Set(["id", "timestamp", "modality", "model_id", ...OPTIONAL_CHECKS.keys()]);

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
