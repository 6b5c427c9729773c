import { z } from "zod";

/** Answer schemas of the manage routes (projects, providers, models, status); the request bodies sit beside their service functions. */

const source = z.enum(["yaml", "db"]).describe("yaml: defined in voxgate.yaml (read-only here); db: managed through the API");
const money = z.number().describe("USD");

export const Project = z
  .object({
    id: z.string(),
    name: z.string(),
    description: z.string().nullable(),
    daily_budget: z.number().nullable().describe("USD per rolling 24 h; null = none"),
    budget_action: z.string().describe("what the gateway does at the budget: warn or block"),
    default_stack: z.string().nullable(),
    tags: z.array(z.string()),
    accent: z.string().nullable(),
    tenant_id: z
      .string()
      .nullable()
      .describe("the owning tenant: gateway calls of another tenant's keys naming this project are refused 403; null = shared (the budget applies per tenant)"),
    source,
  })
  .meta({ id: "Project" });

const todayStats = z.object({ cost_today: money, requests_today: z.number().int() });

export const ProjectList = z.object({ projects: z.array(Project), stats: z.record(z.string(), todayStats) });

export const ProjectDetail = Project.extend({
  project_id: z.string().describe("same as id"),
  today_spend: money.describe("USD: provider cost (cost_usd) of the project's requests in the rolling 24 hours before the request"),
  budget_status: z
    .enum(["ok", "warning", "exceeded"])
    .describe("ok: no budget or spend below 80 % of daily_budget; warning: from 80 % (inclusive); exceeded: from 100 % (inclusive)"),
  today: todayStats.describe("cost_today (USD) and requests_today over the rolling 24 hours"),
  costs_today: z
    .object({
      total: money.describe("USD: provider cost over the rolling 24 hours"),
      by_provider: z.record(z.string(), money).describe("USD per provider id"),
      by_model: z.record(z.string(), money).describe("USD per model_id"),
    })
    .describe("provider cost over the rolling 24 hours, in total, per provider and per model"),
});

export const Model = z
  .object({
    model_id: z.string().describe("provider_id/model_name"),
    modality: z.enum(["stt", "llm", "tts"]),
    provider_id: z.string(),
    model_name: z.string(),
    display_name: z.string().nullable(),
    default_language: z.string().nullable(),
    source,
  })
  .meta({ id: "Model" });

export const Provider = z
  .object({
    provider_id: z.string(),
    provider_type: z.string(),
    source,
    api_key_masked: z.string().nullable().describe("the key, masked; the key itself is never answered"),
    base_url: z.string().nullable(),
    configured: z.boolean(),
    type: z.enum(["cloud", "local"]),
  })
  .meta({ id: "Provider" });

export const ProviderTest = z.object({
  status: z.enum(["ok", "failed"]),
  latency_ms: z.number(),
  message: z.string().optional(),
});

const providerWrite = z.object({
  provider_id: z.string(),
  provider_type: z.string(),
  api_key_masked: z.string().nullable(),
  base_url: z.string().nullable(),
  source: z.literal("db"),
});

export const ProviderCreated = providerWrite;
export const ProviderUpdated = providerWrite.extend({ updated: z.literal(true) });

export const Created = (idField: "project_id" | "model_id") =>
  z.object({ [idField]: z.string(), source: z.literal("db"), created: z.literal(true) });

/** A DELETE without confirm=true previews; with it, deletes. */
export const DeleteAnswer = (preview: z.ZodType) =>
  z.union([z.object({ would_delete: preview }), z.looseObject({ deleted: z.string() })]).describe("without confirm=true: what would be deleted; with it: what was");

const statusProviders = z.record(z.string(), z.object({ configured: z.boolean(), type: z.enum(["cloud", "local"]) })).describe("empty for a tenant-bound key");

export const Status = z.object({ providers: statusProviders, model_count: z.number().int(), project_count: z.number().int() });

export const DashboardStatus = z.object({
  providers: statusProviders,
  models: z.record(z.string(), z.object({ modality: z.string(), provider: z.string() })),
  fallbacks: z.object({ stt: z.unknown(), llm: z.unknown(), tts: z.unknown() }),
});

export const ModelList = z.object({
  models: z.record(z.string(), z.object({ modality: z.string(), provider: z.string(), model: z.string() })),
  project: z.string().nullable(),
});
