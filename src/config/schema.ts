import { z } from "zod";
import { pricingFormProblems, scopeKey, toRuleDef } from "../billing/rule-form.js";
import { MAX_UNIT_PRICE_USD, MODALITIES, modelId, type RateRuleInput, rateRuleInputSchema, usd } from "./rate-rule.js";

/** gateway.streams: the governance of every relayed WebSocket (a looseObject: other stream knobs join it). */
const streamsSchema = z.looseObject({
  /** No frame in either direction for this long: close 1000 `idle timeout`. */
  idle_timeout_s: z.number().positive().default(60),
  /** A stream open this long is closed 1000 `max duration`. */
  max_duration_s: z.number().positive().default(14_400),
  /** Open streams per key on this replica; the next upgrade is refused 429 too_many_streams. */
  max_per_key: z.number().int().positive().default(100),
  /** Bytes queued toward a side that does not read, per direction, before the writing side is paused. */
  max_buffered_bytes: z.number().int().positive().default(4 * 1024 * 1024),
  /** A direction still over max_buffered_bytes this long after its writer was paused: close 1013. */
  stall_timeout_s: z.number().positive().default(10),
  /** A `block` budget's stream holds this many seconds of audio (STT) ahead, one increment at a time. */
  reserve_seconds: z.number().positive().default(15),
  /** A `block` budget's stream holds this many characters (TTS) ahead, one increment at a time. */
  reserve_characters: z.number().int().positive().default(1000),
  /** Failover: no vendor frame for this long while client audio keeps arriving (STT), or a generation waits for its first audio (TTS), is a failed vendor. */
  stall_ms: z.number().int().positive().default(2_000),
  /** Live STT failover: seconds of the client's latest audio kept to replay to the next vendor. */
  replay_seconds: z.number().positive().max(60).default(5),
});
const STREAMS_DEFAULTS = {
  idle_timeout_s: 60,
  max_duration_s: 14_400,
  max_per_key: 100,
  max_buffered_bytes: 4 * 1024 * 1024,
  stall_timeout_s: 10,
  stall_ms: 2_000,
  replay_seconds: 5,
  reserve_seconds: 15,
  reserve_characters: 1000,
};

/** The shape of voxgate.yaml (same shape as voicegateway's voicegw.yaml). One schema, every section. */

export { MAX_MARKUP, MAX_UNIT_PRICE_USD, MODALITIES, type Modality, PRICE_UNITS, type PriceUnit, type RateRuleInput, rateRuleInputSchema } from "./rate-rule.js";

export const PROVIDER_TYPES = [
  "openai",
  "anthropic",
  "groq",
  "deepgram",
  "elevenlabs",
  "cartesia",
  "assemblyai",
  "gemini",
  "openai_compatible",
] as const;
export type ProviderType = (typeof PROVIDER_TYPES)[number];

const providerSchema = z.looseObject({
  type: z.enum(PROVIDER_TYPES).optional(),
  api_key: z.string().optional(),
  base_url: z.string().nullable().optional(),
});

const modelSchema = z.looseObject({
  provider: z.string().min(1),
  /** Optional as in voicegw.yaml (local voices such as `local/kokoro`): defaults to the id after `<provider>/`. */
  model: z.string().min(1).optional(),
  display_name: z.string().optional(),
  default_language: z.string().optional(),
});

/** The model name an entry stands for: its `model`, else the part of its id after the first `/`. */
function withModelName(id: string, m: z.infer<typeof modelSchema>) {
  const slash = id.indexOf("/");
  return { ...m, model: m.model ?? (slash >= 0 ? id.slice(slash + 1) : id) };
}

const modelsByModality = z
  .record(z.string(), modelSchema)
  .default({})
  .transform((entries) => Object.fromEntries(Object.entries(entries).map(([id, m]) => [id, withModelName(id, m)])));

/**
 * What a project does when its daily budget is spent (docs/api/gateway.md): `warn` (served, with a header),
 * `block` (the gateway refuses new calls with 402 budget_exceeded) or `throttle` (served by the
 * project's `throttle_stack`). docs/api/gateway.md.
 */
export const BUDGET_ACTIONS = ["warn", "block", "throttle"] as const;
export type BudgetAction = (typeof BUDGET_ACTIONS)[number];

const projectSchema = z.strictObject({
  name: z.string().optional(),
  description: z.string().optional(),
  daily_budget: z.number().nonnegative().optional(),
  budget_action: z.enum(BUDGET_ACTIONS).default("warn"),
  default_stack: z.string().optional(),
  /** throttle: over budget, the gateway serves the project's calls with throttle_stack (a cheaper stack). */
  throttle_stack: z.string().optional(),
  tags: z.array(z.string()).default([]),
  accent: z.string().optional(),
  /** The owning tenant: gateway calls of other tenants' keys naming this project are refused 403. */
  tenant_id: z.string().min(1).max(256).optional(),
  /** A shorter horizon for this project's raw rows than retention.raw_days (docs/operations.md). */
  retention_days: z.number().int().positive().max(36_500).optional(),
});


/**
 * A price-catalog entry override (pricing.catalog in voxgate.yaml), keyed by `<provider>/<model>`.
 * Merged field by field over the shipped entry of the same key; a new key needs `modality`.
 * A price set to null means "matched, holds no rate" (unrated).
 */
export const catalogEntryInputSchema = z.strictObject({
  modality: z.enum(MODALITIES).optional(),
  price_usd: usd(MAX_UNIT_PRICE_USD).nullable().optional(),
  input_price_usd: usd(MAX_UNIT_PRICE_USD).nullable().optional(),
  output_price_usd: usd(MAX_UNIT_PRICE_USD).nullable().optional(),
  cached_input_price_usd: usd(MAX_UNIT_PRICE_USD).nullable().optional(),
  /** llm: input / output audio tokens per 1M when the model prices them apart from text (realtime models). */
  input_audio_price_usd: usd(MAX_UNIT_PRICE_USD).nullable().optional(),
  output_audio_price_usd: usd(MAX_UNIT_PRICE_USD).nullable().optional(),
  self_hosted: z.boolean().optional(),
  as_of: z.string().max(40).optional(),
  source: z.string().max(400).optional(),
});
export type CatalogEntryInput = z.infer<typeof catalogEntryInputSchema>;

/** Seed rules obey the same pricing-form matrix as POST /v1/billing/rate-card/rules, and one rule per scope key. */
function checkSeedRules(rules: RateRuleInput[], ctx: z.RefinementCtx): void {
  const seen = new Map<string, number>();
  rules.forEach((r, i) => {
    const problems = pricingFormProblems(r);
    for (const p of problems) ctx.addIssue({ code: "custom", message: p.message, path: p.path ? [i, p.path] : [i] });
    if (problems.length > 0) return;
    const key = scopeKey(toRuleDef(r));
    const first = seen.get(key);
    if (first !== undefined) ctx.addIssue({ code: "custom", message: `same scope as rules[${first}] (${key}): one rule per scope`, path: [i] });
    else seen.set(key, i);
  });
}

const keyScopes = z.array(z.enum(["read", "write", "admin", "ingest", "infer", "*"])).default(["*"]);

/**
 * A static key: a bare string, `{key, scopes, tenant_id, name}`, or voicegw.yaml's
 * `{token, name, scopes}` (the key under `token`; read as `key`). Either way the key must be at least
 * 16 characters (src/auth/static-keys.ts refuses shorter ones at startup).
 */
const apiKeyEntry = z.union([
  z.string().min(1),
  z.strictObject({
    key: z.string().min(1),
    scopes: keyScopes,
    tenant_id: z.string().min(1).optional(),
    name: z.string().optional(),
  }),
  z
    .strictObject({
      token: z.string().min(1),
      scopes: keyScopes,
      tenant_id: z.string().min(1).optional(),
      name: z.string().optional(),
    })
    .transform(({ token, ...rest }) => ({ key: token, ...rest })),
]);

/**
 * voicegw.yaml sections (and keys) Voxgate has no use for: accepted, reported once at startup as a
 * warning naming each key (config/load.ts), never fatal and never silently dropped.
 */
export const UNUSED_KEYS = ["latency", "dashboard", "observability", "cost_tracking.daily_budget_alert"] as const;
const unused = z.unknown().optional();

/** The server's timeouts and minimum body rate (docs/auth.md, "Gateway threat model"). */
export const SERVE_DEFAULTS = {
  headers_timeout_ms: 15_000,
  request_timeout_ms: 120_000,
  min_body_bytes_per_second: 1024,
  body_rate_window_ms: 10_000,
};

export const configSchema = z.strictObject({
  latency: unused,
  dashboard: unused,
  observability: unused,
  providers: z.record(z.string(), providerSchema.nullable().transform((p) => p ?? {})).default({}),
  models: z
    .looseObject({ stt: modelsByModality, llm: modelsByModality, tts: modelsByModality })
    .default({ stt: {}, llm: {}, tts: {} }),
  stacks: z
    .record(z.string(), z.looseObject({ stt: z.string().optional(), llm: z.string().optional(), tts: z.string().optional() }))
    .default({}),
  projects: z.record(z.string(), projectSchema).default({}),
  fallbacks: z
    .looseObject({
      stt: z.array(z.string()).default([]),
      llm: z.array(z.string()).default([]),
      tts: z.array(z.string()).default([]),
    })
    .default({ stt: [], llm: [], tts: [] }),
  /**
   * TTS voices by the id a client asks for: per provider id, the voice that provider speaks for it
   * (docs/api/gateway-audio.md, "Voices across providers"). A provider without an entry gets the
   * requested id unchanged.
   */
  voices: z.record(z.string().min(1), z.record(z.string().min(1), z.string().min(1).max(200))).default({}),
  rate_limiting: z
    .record(
      z.string(),
      z.looseObject({
        requests_per_minute: z.number().int().positive().optional(),
        /** Fleet-wide cap on calls in flight to this provider at once (streams included). */
        concurrent_streams: z.number().int().positive().optional(),
      }),
    )
    .default({}),
  /** The gateway's own knobs (docs/api/gateway.md); every one has a default. */
  gateway: z
    .looseObject({
      /** An upstream that sends no response headers within this is a failed attempt (fallback applies). */
      first_byte_timeout_ms: z.number().int().positive().default(60_000),
      /** Longest a failing provider is skipped (Retry-After is honoured up to this). */
      max_cooldown_ms: z.number().int().positive().default(30_000),
      /** Records held in memory waiting for the database; beyond it new records are dropped and counted. */
      record_queue_limit: z.number().int().positive().default(20_000),
      /** How often the in-memory routing table, budgets and keys are refreshed from the store. */
      refresh_interval_ms: z.number().int().positive().default(2_000),
      /** A relayed WebSocket stream records its units so far this often (so budgets see long calls). */
      ws_checkpoint_interval_ms: z.number().int().positive().default(5_000),
      /** Limits of every relayed WebSocket stream (docs/api/gateway-audio.md). */
      streams: streamsSchema.default(STREAMS_DEFAULTS),
    })
    .default({
      first_byte_timeout_ms: 60_000,
      max_cooldown_ms: 30_000,
      record_queue_limit: 20_000,
      refresh_interval_ms: 2_000,
      ws_checkpoint_interval_ms: 5_000,
      streams: STREAMS_DEFAULTS,
    }),
  cost_tracking: z
    .strictObject({
      daily_budget_alert: unused,
      enabled: z.boolean().default(true),
      db_path: z.string().min(1).optional(),
      /** How far back a tenant-bound key may date a request record (docs/billing.md); operator keys may backfill. */
      backdate_horizon_days: z.number().positive().max(36_500).default(7),
    })
    .default({ enabled: true, backdate_horizon_days: 7 }),
  auth: z.looseObject({ api_keys: z.array(apiKeyEntry).default([]) }).default({ api_keys: [] }),
  serve: z
    .looseObject({
      port: z.number().int().min(1).max(65535).default(8080),
      host: z.string().default("0.0.0.0"),
      provider_base_url_hosts: z.array(z.string()).default([]),
      /** Largest accepted request body, after gzip decompression. */
      body_limit_bytes: z.number().int().positive().default(8 * 1024 * 1024),
      /** A client must have sent its whole request head within this (408 and closed otherwise). */
      headers_timeout_ms: z.number().int().positive().default(SERVE_DEFAULTS.headers_timeout_ms),
      /** A client must have sent its whole request, body included, within this (408 and closed otherwise). */
      request_timeout_ms: z.number().int().positive().default(SERVE_DEFAULTS.request_timeout_ms),
      /** A body arriving slower than this, over each body_rate_window_ms, has its connection closed (0: off). */
      min_body_bytes_per_second: z.number().int().min(0).default(SERVE_DEFAULTS.min_body_bytes_per_second),
      body_rate_window_ms: z.number().int().positive().default(SERVE_DEFAULTS.body_rate_window_ms),
      /** With auth off, Host names accepted besides loopback ones (a reverse proxy's name). */
      allowed_hosts: z.array(z.string().min(1)).default([]),
    })
    .default({ port: 8080, host: "0.0.0.0", provider_base_url_hosts: [], body_limit_bytes: 8 * 1024 * 1024, allowed_hosts: [], ...SERVE_DEFAULTS }),
  pricing: z
    .looseObject({
      gate: z.enum(["declared_only", "permissive"]).default("declared_only"),
      /** Catalog overrides, keyed by `<provider>/<model>` (see docs/billing.md). */
      catalog: z.record(modelId, catalogEntryInputSchema).default({}),
    })
    .default({ gate: "declared_only", catalog: {} }),
  rate_card: z
    .looseObject({
      default_markup: z.number().finite().nonnegative().default(1),
      rules: z.array(rateRuleInputSchema).default([]).superRefine(checkSeedRules),
    })
    .default({ default_markup: 1, rules: [] }),
  workers: z
    .looseObject({
      enabled: z.boolean().default(true),
      node_scrape_interval_seconds: z.number().positive().default(15),
    })
    .default({ enabled: true, node_scrape_interval_seconds: 15 }),
  /** How long rows are kept (docs/operations.md). raw_days 0 keeps raw rows forever. */
  retention: z
    .strictObject({
      raw_days: z.number().int().nonnegative().max(36_500).default(90),
      rollup_days: z.number().int().nonnegative().max(36_500).default(800),
      audit_days: z.number().int().nonnegative().max(36_500).default(400),
      interval_minutes: z.number().positive().max(10_080).default(60),
    })
    .default({ raw_days: 90, rollup_days: 800, audit_days: 400, interval_minutes: 60 }),
  livekit: z.looseObject({ api_key: z.string().optional(), api_secret: z.string().optional() }).optional(),
  database: z.looseObject({ url: z.string().min(1).optional() }).optional(),
});

export type Config = z.infer<typeof configSchema>;
export type ServeConfig = Config["serve"];
