import { moneyText } from "../money.js";
import { z } from "zod";
import { type Catalog, type RateCard, type Rating, type RatingInput, rateRequest } from "../billing/rate.js";
import type { RequestRow } from "../db/schema/requests.js";
import { count, firstIssue, flexibleTimestamp, int32, int53, jsonObject, longText, MAX_METADATA_BYTES, nonNegative, shortText, usd, uuid } from "./fields.js";
import { fastValidator } from "./record-fast.js";

/**
 * One request record of POST /v1/ingest (the table of docs/api/ingest.md). Unknown keys, and `tenant_id`,
 * `rated_price_usd`, `rate_rule` sent by the agent, are ignored: tenant comes from the key,
 * price from the collector's own rate card.
 */
export const requestRecordSchema = z.object({
  id: uuid.describe("the idempotency key: a UUID in any 8-4-4-4-12 hex form, stored lower-case"),
  timestamp: flexibleTimestamp.describe(
    "ISO-8601 string, or a number: epoch seconds below 1e11 (floats fine), else epoch ms; from 2000-01-01 to the collector's clock + 5 minutes; tenant-bound keys not before the back-dating horizon",
  ),
  modality: z.enum(["stt", "llm", "tts"]),
  model_id: shortText.describe("<provider>/<model>; without a /, provider is required"),
  status: z.enum(["success", "error", "fallback"]).nullish().describe("default success"),
  error_message: longText.nullish(),
  fallback_from: shortText.nullish(),
  provider: shortText.nullish().describe("default: the model_id prefix"),
  project: shortText.nullish().describe("default: default"),
  session_id: shortText.nullish(),
  room_name: shortText.nullish(),
  agent_id: shortText.nullish(),
  ttfb_ms: nonNegative.nullish(),
  total_latency_ms: nonNegative.nullish(),
  cost_usd: usd.nullish().describe("the provider's cost as the agent saw it"),
  input_tokens: int53.nullish(),
  output_tokens: int53.nullish(),
  cached_input_tokens: int53.nullish().describe("billed at the cached-input price"),
  /** voicegateway's name for cached prompt tokens; `cached_input_tokens` wins when both are given. */
  input_audio_tokens: int53.nullish().describe("of input_tokens, the audio ones (llm; realtime models price them apart)"),
  output_audio_tokens: int53.nullish().describe("of output_tokens, the audio ones (llm)"),
  cached_input_units: count.nullish().describe("voicegateway's name for cached prompt tokens (rounded); cached_input_tokens wins when both are given"),
  audio_seconds: nonNegative.nullish(),
  characters: int53.nullish(),
  input_units: count.nullish().describe("generic units: llm tokens, stt minutes, tts characters; the specific field wins when both are given"),
  output_units: count.nullish(),
  metadata: jsonObject
    .nullish()
    .describe(`a JSON object of at most ${MAX_METADATA_BYTES} bytes serialized, stored as is (with revision, turn_index and pricing_source added when sent)`),
  is_probe: z.boolean().nullish(),
  // voicegateway agents send these on each record; kept in the row's metadata (docs/api/ingest.md).
  revision: z.union([shortText, int53]).nullish().describe("the agent's revision (voicegateway); kept in metadata"),
  turn_index: int32.nullish().describe("the session turn this request served (voicegateway); kept in metadata"),
  pricing_source: shortText.nullish().describe("where the agent's own price came from (voicegateway); informational, kept in metadata"),
});

/**
 * `metadata.billed_seconds`: the seconds a vendor bills when they differ from the audio's (AssemblyAI
 * streaming bills the open session); per-minute prices apply to them. Null when absent or not a number.
 */
function billedSeconds(metadata: unknown): number | null {
  const v = (metadata as { billed_seconds?: unknown } | null | undefined)?.billed_seconds;
  return typeof v === "number" && Number.isFinite(v) && v >= 0 ? v : null;
}

/** Record fields a voicegateway agent sends that Voxgate keeps in the row's `metadata` under the same name. */
export const METADATA_FIELDS = ["revision", "turn_index", "pricing_source"] as const;

export type RequestRecord = z.infer<typeof requestRecordSchema>;

export type RecordCheck = { ok: true; row: RequestRow } | { ok: false; reason: string };

const orNull = <T>(v: T | null | undefined): T | null => (v === undefined ? null : v);
const roundOrNull = (v: number | null | undefined): number | null => (v == null ? null : Math.round(v));

/**
 * Validates and normalizes one record into a requests row: specific and generic units both filled
 * (stt generic units are minutes), provider defaulted from the model_id prefix, rated with the
 * collector's card. `notBefore` (epoch ms) is the back-dating horizon of tenant-bound keys: an older
 * record is skipped, so a tenant cannot change a period already invoiced (null: no horizon, operator
 * keys backfill history). Pure: the same input, card and horizon give the same row.
 */
export function toRequestRow(raw: unknown, tenantId: string | null, card: RateCard, catalog: Catalog, notBefore: number | null = null): RecordCheck {
  // The common record is read in place: its values are the parsed ones but for the timestamp.
  const changed = fast.read(raw);
  if (changed !== null && onlyTimestamp(changed)) return rowOf(raw as RequestRecord, changed.timestamp, tenantId, card, catalog, notBefore);
  const checked = parseRecord(raw);
  if (!checked.ok) return checked;
  return rowOf(checked.record, checked.record.timestamp, tenantId, card, catalog, notBefore);
}

/** Whether a reading changed the timestamp (into its Date) and nothing else. */
function onlyTimestamp(changed: Record<string, unknown>): changed is { timestamp: Date } {
  for (const key in changed) if (key !== "timestamp") return false;
  return changed.timestamp instanceof Date;
}

/**
 * A record built in process by a trusted producer (the gateway's recorder, the OTLP receiver): the
 * schema's parsed shape already, `timestamp` a Date or epoch milliseconds (never seconds).
 */
export type TypedRecord = Omit<RequestRecord, "timestamp"> & { timestamp: Date | number };

/**
 * toRequestRow for a typed record: no parse (no copy, no key filtering, no timestamp decoding), only
 * each value's rule (lengths, bounds, storable text: span attributes still come from outside). A
 * refused record is handed to the schema, which words the reason (and decides at the clock's edge).
 */
export function typedRequestRow(
  record: TypedRecord,
  tenantId: string | null,
  card: RateCard,
  catalog: Catalog,
  notBefore: number | null = null,
): RecordCheck {
  if (fast.check(record)) {
    const t = record.timestamp;
    return rowOf(record, t instanceof Date ? t : new Date(Math.round(t)), tenantId, card, catalog, notBefore);
  }
  const t = record.timestamp;
  const parsed = requestRecordSchema.safeParse(t instanceof Date ? { ...record, timestamp: t.getTime() } : record);
  if (!parsed.success) return { ok: false, reason: firstIssue(parsed.error) };
  return rowOf(parsed.data, parsed.data.timestamp, tenantId, card, catalog, notBefore);
}

/** The row of a valid record dated `ts`: horizon, provider, units, rating (toRequestRow's common part). */
function rowOf(
  r: Omit<RequestRecord, "timestamp">,
  ts: Date,
  tenantId: string | null,
  card: RateCard,
  catalog: Catalog,
  notBefore: number | null,
): RecordCheck {
  if (notBefore !== null && ts.getTime() < notBefore) {
    return { ok: false, reason: "timestamp: older than the back-dating horizon for tenant keys (cost_tracking.backdate_horizon_days); the operator may backfill it" };
  }
  const slash = r.model_id.indexOf("/");
  const provider = r.provider ?? (slash > 0 ? r.model_id.slice(0, slash) : null);
  if (!provider) return { ok: false, reason: "provider: required when model_id has no <provider>/ prefix" };

  let inputTokens: number | null = null;
  let outputTokens: number | null = null;
  let cachedInputTokens: number | null = null;
  let inputAudioTokens: number | null = null;
  let outputAudioTokens: number | null = null;
  let audioSeconds: number | null = null;
  let characters: number | null = null;
  let inputUnits: number | null = orNull(r.input_units);
  const outputUnits: number | null = orNull(r.output_units);
  if (r.modality === "llm") {
    inputTokens = r.input_tokens ?? roundOrNull(r.input_units);
    outputTokens = r.output_tokens ?? roundOrNull(r.output_units);
    cachedInputTokens = r.cached_input_tokens ?? roundOrNull(r.cached_input_units);
    inputAudioTokens = orNull(r.input_audio_tokens);
    outputAudioTokens = orNull(r.output_audio_tokens);
    return finish(inputTokens, outputTokens);
  }
  if (r.modality === "stt") {
    // Token-billed transcription (gpt-4o-transcribe) reports tokens beside the audio's seconds: both kept.
    inputTokens = r.input_tokens ?? null;
    outputTokens = r.output_tokens ?? null;
    cachedInputTokens = r.cached_input_tokens ?? null;
    audioSeconds = r.audio_seconds ?? (r.input_units == null ? null : r.input_units * 60);
    inputUnits = r.audio_seconds == null ? inputUnits : r.audio_seconds / 60;
    return finish(inputUnits, outputUnits);
  }
  characters = r.characters ?? roundOrNull(r.input_units);
  return finish(characters, outputUnits);

  function finish(genericIn: number | null, genericOut: number | null): RecordCheck {
    const status = r.status ?? "success";
    const rating = safeRate(
      {
        modality: r.modality,
        modelId: r.model_id,
        provider: provider ?? "",
        tenantId,
        status,
        inputTokens,
        outputTokens,
        cachedInputTokens,
        inputAudioTokens,
        outputAudioTokens,
        audioSeconds,
        billedSeconds: r.modality === "stt" ? billedSeconds(r.metadata) : null,
        characters,
        costUsd: orNull(r.cost_usd),
      },
      card,
      catalog,
    );
    // The storage row itself, keyed by column (store-requests.ts sends it to Postgres as is).
    const row: RequestRow = {
      id: r.id.toLowerCase(),
      ts,
      tenant_id: tenantId,
      project: r.project ?? "default",
      session_id: orNull(r.session_id),
      room_name: orNull(r.room_name),
      agent_id: orNull(r.agent_id),
      modality: r.modality,
      model_id: r.model_id,
      provider: provider ?? "",
      status,
      error_message: orNull(r.error_message),
      fallback_from: orNull(r.fallback_from),
      ttfb_ms: orNull(r.ttfb_ms),
      total_latency_ms: orNull(r.total_latency_ms),
      cost_usd: moneyText(rating.costUsd),
      rated_price_usd: moneyText(rating.ratedPriceUsd),
      rate_rule: rating.rateRule,
      pricing: rating.pricing,
      input_tokens: inputTokens,
      output_tokens: outputTokens,
      cached_input_tokens: cachedInputTokens,
      input_audio_tokens: inputAudioTokens,
      output_audio_tokens: outputAudioTokens,
      audio_seconds: audioSeconds,
      characters,
      input_units: genericIn,
      output_units: genericOut,
      metadata: withRecordFields(r),
      is_probe: r.is_probe ?? false,
    };
    return { ok: true, row };
  }
}

/** The record's metadata with `revision`, `turn_index` and `pricing_source` added when sent (the record's fields win). */
function withRecordFields(r: Omit<RequestRecord, "timestamp">): Record<string, unknown> | null {
  let metadata = orNull(r.metadata);
  for (const key of METADATA_FIELDS) {
    const value = r[key];
    if (value == null) continue;
    metadata = { ...metadata, [key]: value };
  }
  return metadata;
}

/** The schema's zod-free validator, derived from it (src/ingest/record-fast.ts). */
const fast = fastValidator<RequestRecord>(requestRecordSchema.shape);

/** The well-formed common case skips zod; anything else (and every error reason) is the schema's. */
function parseRecord(raw: unknown): { ok: true; record: RequestRecord } | { ok: false; reason: string } {
  const record = fast.parse(raw);
  if (record) return { ok: true, record };
  const parsed = requestRecordSchema.safeParse(raw);
  return parsed.success ? { ok: true, record: parsed.data } : { ok: false, reason: firstIssue(parsed.error) };
}

/** The record parsed as POST /v1/ingest parses it without zod, or null (then the schema decides); for the parity test. */
export const fastRecord = (raw: unknown, now?: number): RequestRecord | null => fast.parse(raw, now);

/**
 * The record as POST /v1/ingest reads it in place (fast.read): the schema's keys of `raw` with the
 * values a reading changed, or null; for the parity test (it must equal fastRecord's answer).
 */
export function fastRecordInPlace(raw: unknown, now?: number): Record<string, unknown> | null {
  const changed = fast.read(raw, now);
  if (changed === null) return null;
  const out: Record<string, unknown> = {};
  for (const key of fast.keys) if (Object.hasOwn(raw as object, key)) out[key] = key in changed ? changed[key] : (raw as Record<string, unknown>)[key];
  return out;
}

/**
 * Rating must never cost the agent its telemetry: should the rate card fail on a record, the record
 * is kept with its provider cost and marked unpriced (pricing "unknown"), so a later re-rate can fix it.
 */
function safeRate(input: RatingInput, card: RateCard, catalog: Catalog): Rating {
  try {
    return rateRequest(input, card, catalog);
  } catch {
    return { costUsd: input.costUsd, ratedPriceUsd: null, rateRule: null, pricing: "unknown" };
  }
}

