import { z } from "zod";

/** The shape of voxgate.yaml (same shape as voicegateway's voicegw.yaml). One schema, every section. */

export const MODALITIES = ["stt", "llm", "tts"] as const;
export type Modality = (typeof MODALITIES)[number];

export const PROVIDER_TYPES = [
  "openai",
  "anthropic",
  "groq",
  "deepgram",
  "elevenlabs",
  "cartesia",
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
  model: z.string().min(1),
  display_name: z.string().optional(),
  default_language: z.string().optional(),
});

const modelsByModality = z.record(z.string(), modelSchema).default({});

const projectSchema = z.looseObject({
  name: z.string().optional(),
  description: z.string().optional(),
  daily_budget: z.number().nonnegative().optional(),
  budget_action: z.enum(["warn", "block"]).default("warn"),
  default_stack: z.string().optional(),
  tags: z.array(z.string()).default([]),
  accent: z.string().optional(),
});

export const PRICE_UNITS = ["minute", "second", "char", "1k_char", "request", "1m_token", "1k_token"] as const;
export type PriceUnit = (typeof PRICE_UNITS)[number];

/** A rate-card rule as written in YAML or POSTed to endpoint 16; validated further by billing. */
export const rateRuleInputSchema = z.strictObject({
  tenant: z.string().min(1).max(200).optional(),
  plan: z.string().min(1).max(200).optional(),
  modality: z.enum(MODALITIES).optional(),
  provider: z.string().min(1).max(200).optional(),
  model: z.string().min(1).max(400).optional(),
  sets: z.enum(["price", "cost"]).default("price"),
  markup: z.number().finite().nonnegative().optional(),
  fixed: z.number().finite().nonnegative().optional(),
  unit: z.string().optional(),
  input_price_usd: z.number().finite().nonnegative().optional(),
  output_price_usd: z.number().finite().nonnegative().optional(),
  cached_input_price_usd: z.number().finite().nonnegative().optional(),
});
export type RateRuleInput = z.infer<typeof rateRuleInputSchema>;

const apiKeyEntry = z.union([
  z.string().min(1),
  z.strictObject({
    key: z.string().min(1),
    scopes: z.array(z.enum(["read", "write", "admin", "ingest", "*"])).default(["*"]),
    tenant_id: z.string().min(1).optional(),
    name: z.string().optional(),
  }),
]);

export const configSchema = z.looseObject({
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
  rate_limiting: z.record(z.string(), z.looseObject({ requests_per_minute: z.number().int().positive() })).default({}),
  cost_tracking: z
    .looseObject({ enabled: z.boolean().default(true), db_path: z.string().min(1).optional() })
    .default({ enabled: true }),
  auth: z.looseObject({ api_keys: z.array(apiKeyEntry).default([]) }).default({ api_keys: [] }),
  serve: z
    .looseObject({
      port: z.number().int().min(1).max(65535).default(8080),
      host: z.string().default("0.0.0.0"),
      provider_base_url_hosts: z.array(z.string()).default([]),
      /** Largest accepted request body, after gzip decompression. */
      body_limit_bytes: z.number().int().positive().default(8 * 1024 * 1024),
    })
    .default({ port: 8080, host: "0.0.0.0", provider_base_url_hosts: [], body_limit_bytes: 8 * 1024 * 1024 }),
  pricing: z
    .looseObject({
      gate: z.enum(["declared_only", "permissive"]).default("declared_only"),
      /** Catalog overrides, keyed by `<provider>/<model>`; shape owned by src/billing/catalog. */
      catalog: z.record(z.string(), z.unknown()).default({}),
    })
    .default({ gate: "declared_only", catalog: {} }),
  rate_card: z
    .looseObject({
      default_markup: z.number().finite().nonnegative().default(1),
      rules: z.array(rateRuleInputSchema).default([]),
    })
    .default({ default_markup: 1, rules: [] }),
  workers: z
    .looseObject({
      enabled: z.boolean().default(true),
      node_scrape_interval_seconds: z.number().positive().default(15),
    })
    .default({ enabled: true, node_scrape_interval_seconds: 15 }),
  livekit: z.looseObject({ api_key: z.string().optional(), api_secret: z.string().optional() }).optional(),
  database: z.looseObject({ url: z.string().min(1).optional() }).optional(),
});

export type Config = z.infer<typeof configSchema>;
