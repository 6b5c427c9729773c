import { z } from "zod";
import { KEY_SCOPES } from "../auth/context.js";
import { Model } from "../manage/schemas.js";
import { CostLineSchema } from "../reports/schemas.js";
import { COST_PERIODS, LATENCY_PERIODS } from "../reports/window.js";
import { SessionRowSchema } from "../sessions/schemas.js";

/**
 * Answer schemas of the dashboard API (/api/*) beyond the /v1 reports it shares. The types the
 * handlers build and the web app reads (dashboard/src/api/types.ts) are inferred from them.
 */

const usd = z.number().describe("USD");
const count = z.number().int();
const ms = z.number().nullable().describe("milliseconds; null without samples");
const epochMs = z.number().nullable().describe("epoch milliseconds");

export const DashboardCostReportSchema = z
  .object({
    period: z.enum(COST_PERIODS),
    total: usd,
    by_provider: z.record(z.string(), CostLineSchema),
    by_model: z.record(z.string(), CostLineSchema),
    by_project: z.record(z.string(), CostLineSchema).optional().describe("only without a project filter"),
  })
  .meta({ id: "DashboardCostReport", description: "GET /v1/costs without project and requests" });
export type DashboardCostReport = z.infer<typeof DashboardCostReportSchema>;

export const WhoamiSchema = z
  .object({
    auth_enabled: z.boolean().describe("false: no keys configured, every caller is the operator (the self-hosted default)"),
    authenticated: z.boolean().describe("false: no key was presented while auth is on (the web app shows its sign-in screen)"),
    kind: z.enum(["none", "static", "virtual"]),
    actor: z.string().describe("audit id of the key (vk_ key id, static:<name>, operator); never the key or its digest"),
    role: z.enum(["operator", "tenant", "admin"]),
    tenant_id: z.string().nullable().describe("null: every tenant (operator)"),
    scopes: z.array(z.enum(KEY_SCOPES)),
    can: z.object({
      read: z.boolean(),
      write: z.boolean().describe("telemetry and rate-card rule writes"),
      manage: z.boolean().describe("providers, models and projects: write scope from a key bound to no tenant"),
      admin: z.boolean().describe("minting and revoking API keys"),
    }),
  })
  .meta({ id: "Whoami" });
export type Whoami = z.infer<typeof WhoamiSchema>;

/** The buckets of the cost and latency series (series.ts). */
export const SERIES_BUCKETS = ["hour", "day"] as const;
const bucket = z.enum(SERIES_BUCKETS);

export const CostPointSchema = z.object({
  t: z.string().describe("bucket start, ISO-8601 UTC"),
  cost: usd,
  requests: count,
  errors: count.describe("rows with status error"),
});
export type CostPoint = z.infer<typeof CostPointSchema>;

export const CostSeriesSchema = z
  .object({ period: z.enum(COST_PERIODS), project: z.string().nullable(), bucket, points: z.array(CostPointSchema).describe("every bucket of the window, zero when nothing ran") })
  .meta({ id: "CostSeries" });
export type CostSeries = z.infer<typeof CostSeriesSchema>;

export const LatencyPointSchema = z.object({
  t: z.string().describe("bucket start, ISO-8601 UTC"),
  requests: count,
  p50_ttfb_ms: ms,
  p95_ttfb_ms: ms,
  p50_total_latency_ms: ms,
  p95_total_latency_ms: ms,
});
export type LatencyPoint = z.infer<typeof LatencyPointSchema>;

export const LatencySeriesSchema = z
  .object({
    period: z.enum(LATENCY_PERIODS),
    project: z.string().nullable(),
    modality: z.string().nullable(),
    bucket,
    points: z.array(LatencyPointSchema).describe("probe traffic excluded"),
  })
  .meta({ id: "LatencySeries" });
export type LatencySeries = z.infer<typeof LatencySeriesSchema>;

export const ModalityLatencySchema = z.object({ requests: count, p50_ttfb_ms: ms, p95_ttfb_ms: ms, p95_total_latency_ms: ms });
export type ModalityLatency = z.infer<typeof ModalityLatencySchema>;

export const ModalityLatencyReportSchema = z
  .object({
    period: z.enum(LATENCY_PERIODS),
    project: z.string().nullable(),
    modalities: z.record(z.string(), ModalityLatencySchema).describe("the per-model sketches merged per modality, probe traffic excluded"),
  })
  .meta({ id: "ModalityLatencyReport" });
export type ModalityLatencyReport = z.infer<typeof ModalityLatencyReportSchema>;

const nullableCount = z.number().nullable();

export const RequestLogDetailSchema = z
  .object({
    id: z.string(),
    timestamp: z.string().describe("ISO-8601 UTC"),
    tenant_id: z.string().nullable(),
    project: z.string(),
    session_id: z.string().nullable(),
    room_name: z.string().nullable(),
    agent_id: z.string().nullable(),
    modality: z.string(),
    model_id: z.string(),
    provider: z.string(),
    status: z.string(),
    error_message: z.string().nullable(),
    fallback_from: z.string().nullable(),
    ttfb_ms: z.number().nullable(),
    total_latency_ms: z.number().nullable(),
    cost_usd: usd,
    rated_price_usd: usd.nullable(),
    rate_rule: z.string().nullable(),
    pricing: z.string(),
    is_probe: z.boolean(),
    units: z.object({
      input_tokens: nullableCount,
      output_tokens: nullableCount,
      cached_input_tokens: nullableCount,
      audio_seconds: nullableCount,
      characters: nullableCount,
      input_units: nullableCount,
      output_units: nullableCount,
    }),
    metadata: z.unknown().describe("the record's metadata object, null when none"),
  })
  .meta({ id: "RequestLogDetail", description: "One request row: the list fields plus units, pricing and metadata" });
export type RequestLogDetail = z.infer<typeof RequestLogDetailSchema>;

export const CallLegSchema = z.object({
  participant_sid: z.string(),
  identity: z.string().nullable(),
  kind: z.string().nullable(),
  state: z.string().nullable(),
  joined_at_ms: epochMs,
  left_at_ms: epochMs,
  disconnect_reason: z.string().nullable(),
  first_audio_track_at_ms: epochMs,
  audio_codec: z.string().nullable(),
});
export type CallLeg = z.infer<typeof CallLegSchema>;

export const CallRowSchema = z
  .object({
    room_sid: z.string(),
    room_name: z.string().nullable(),
    tenant_id: z.string().nullable(),
    project: z.string().nullable(),
    agent_id: z.string().nullable(),
    origin: z.string().nullable(),
    channel: z.string().nullable(),
    end_reason: z.string().nullable(),
    trunk_id: z.string().nullable(),
    is_probe: z.boolean(),
    started_at_ms: epochMs,
    ended_at_ms: epochMs,
    leg_count: count,
    disconnect_reasons: z.array(z.string()).describe("distinct disconnect reasons of the legs (what the SIP status column shows)"),
  })
  .meta({ id: "CallRow" });
export type CallRow = z.infer<typeof CallRowSchema>;

export const CallDetailSchema = CallRowSchema.extend({ legs: z.array(CallLegSchema) }).meta({ id: "CallDetail" });
export type CallDetail = z.infer<typeof CallDetailSchema>;

export const DashboardModelListSchema = z.object({ models: z.array(Model).describe("every model with its source (yaml rows are read-only in the web app)") });
export type ModelList = z.infer<typeof DashboardModelListSchema>;

const epoch = z.number().describe("epoch milliseconds");

export const SessionTurnSchema = z.object({
  seq: z.number().int().describe("room-wide arrival position"),
  turn_index: z.number().int(),
  room_name: z.string().nullable(),
  caller_speak_start_ms: epoch,
  caller_speak_end_ms: epoch,
  agent_speak_start_ms: epochMs,
  agent_speak_end_ms: epochMs,
  response_speed_ms: z.number().nullable().describe("agent start minus caller end; null without an agent answer"),
});
export const SessionTurnsSchema = z.array(SessionTurnSchema).describe("by turn_index, at most 5000");
export type SessionTurns = z.infer<typeof SessionTurnsSchema>;

export const SessionDeadAirSchema = z
  .array(z.object({ started_at_ms: epoch, duration_ms: z.number().int(), threshold_used_ms: z.number().int(), room_name: z.string().nullable() }))
  .describe("by start, at most 5000");
export type SessionDeadAir = z.infer<typeof SessionDeadAirSchema>;

export const SessionTranscriptSchema = z.object({
  session_id: z.string(),
  text_stored: z.boolean().describe("always false: Voxgate stores no utterance text"),
  entries: z.array(
    z.object({ turn_index: z.number().int(), speaker: z.enum(["caller", "agent"]), start_ms: epoch, end_ms: epochMs, text: z.null() }),
  ),
});
export type SessionTranscript = z.infer<typeof SessionTranscriptSchema>;

export const ReplayEventSchema = z.discriminatedUnion("kind", [
  z.object({
    at_ms: epoch,
    kind: z.literal("request"),
    id: z.string(),
    modality: z.string(),
    model_id: z.string(),
    provider: z.string(),
    status: z.string(),
    ttfb_ms: z.number().nullable(),
    total_latency_ms: z.number().nullable(),
    cost_usd: usd.nullable(),
  }),
  z.object({ at_ms: epoch, kind: z.enum(["caller_speech", "agent_speech"]), turn_index: z.number().int(), end_ms: epochMs }),
  z.object({ at_ms: epoch, kind: z.literal("dead_air"), duration_ms: z.number().int(), threshold_used_ms: z.number().int() }),
]);

export const SessionReplaySchema = z.object({
  session: SessionRowSchema,
  events: z.array(ReplayEventSchema).describe("sorted by at_ms"),
  truncated: z.boolean().describe("a kind of row had more than 5000 (only the first 5000 of each are here)"),
});
export type SessionReplay = z.infer<typeof SessionReplaySchema>;
