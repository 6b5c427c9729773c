import { z } from "zod";
import { COST_PERIODS, LATENCY_PERIODS } from "./window.js";

/**
 * Answer schemas of the read path (GET /v1/costs, /v1/latency, /v1/logs) and of the dashboard
 * reports built on the same functions. The TypeScript types of the report functions are inferred
 * from them, so a handler, the document and the web app agree by construction.
 */

const usd = z.number().describe("USD");
const count = z.number().int();
const ms = z.number().nullable().describe("milliseconds; null without samples");

export const CostLineSchema = z.object({ cost: usd, requests: count }).meta({ id: "CostLine" });

export const CostReportSchema = z
  .object({
    period: z.enum(COST_PERIODS).describe("today, week and month are rolling windows ending now; all is since the first row"),
    project: z.string().nullable().describe("the project filter, null for all projects"),
    total: usd.describe("spend in the window, probe traffic included"),
    requests: count,
    by_provider: z.record(z.string(), CostLineSchema),
    by_model: z.record(z.string(), CostLineSchema),
    by_project: z.record(z.string(), CostLineSchema),
  })
  .meta({ id: "CostReport" });
export type CostReport = z.infer<typeof CostReportSchema>;
export type CostLine = z.infer<typeof CostLineSchema>;

export const ModelLatencySchema = z
  .object({
    modality: z.string(),
    provider: z.string(),
    requests: count.describe("production requests (probe traffic excluded)"),
    ttfb_samples: count,
    avg_ttfb_ms: ms,
    p50_ttfb_ms: ms,
    p95_ttfb_ms: ms,
    p99_ttfb_ms: ms,
    total_latency_samples: count,
    avg_total_latency_ms: ms,
    p50_total_latency_ms: ms,
    p95_total_latency_ms: ms,
    p99_total_latency_ms: ms,
  })
  .meta({ id: "ModelLatency", description: "Nearest-rank percentiles: exact up to 1000 samples, within 1% beyond" });
export type ModelLatency = z.infer<typeof ModelLatencySchema>;

export const LatencyReportSchema = z
  .object({
    period: z.enum(LATENCY_PERIODS),
    project: z.string().nullable(),
    models: z.record(z.string(), ModelLatencySchema).describe("by model id"),
  })
  .meta({ id: "LatencyReport" });
export type LatencyReport = z.infer<typeof LatencyReportSchema>;

export const RequestLogRecordSchema = z
  .object({
    id: z.string(),
    timestamp: z.string().describe("ISO-8601 UTC"),
    project: z.string(),
    modality: z.string(),
    model_id: z.string(),
    provider: z.string(),
    cost_usd: usd,
    ttfb_ms: z.number().nullable(),
    total_latency_ms: z.number().nullable(),
    status: z.string().describe("success, error or fallback"),
    session_id: z.string().nullable(),
  })
  .meta({ id: "RequestLogRecord" });
export type RequestLogRecord = z.infer<typeof RequestLogRecordSchema>;

export const RequestLogListSchema = z.array(RequestLogRecordSchema).describe("newest first, probe traffic included");

export const OverviewSchema = z
  .object({
    total_requests: count.describe("every request since the first row"),
    total_cost_today: usd.describe("rolling 24 h, as GET /v1/costs?period=today"),
    total_cost_all: usd,
    active_models: count.describe("models with requests in the rolling 24 h"),
    providers_configured: count,
  })
  .meta({ id: "Overview" });
export type Overview = z.infer<typeof OverviewSchema>;
