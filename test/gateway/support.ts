import { sql } from "drizzle-orm";
import { createTestApp, type TestApp } from "../support/app.js";

/** Keys of the gateway tests (static keys need 16+ characters). */
export const OPERATOR_KEY = "gw-operator-key-0123456789";
export const INGEST_KEY = "gw-ingest-only-key-0123456789";
export const READ_KEY = "gw-read-only-key-0123456789";
export const ACME_KEY = "gw-acme-infer-key-0123456789";
export const GLOBEX_KEY = "gw-globex-infer-key-0123456789";
/** The provider's own key: the stub must see this and never a Voxgate key. */
export const PROVIDER_KEY = "sk-provider-secret-key-abcdef0123456789";

export const KEYS_YAML = `
auth:
  api_keys:
    - ${OPERATOR_KEY}
    - { key: ${INGEST_KEY}, scopes: [ingest] }
    - { key: ${READ_KEY}, scopes: [read] }
    - { key: ${ACME_KEY}, scopes: [infer, read], tenant_id: acme }
    - { key: ${GLOBEX_KEY}, scopes: ["*"], tenant_id: globex }
rate_card:
  default_markup: 1.25
`;

/**
 * The test keys, the `openai` provider at a stub vendor (given the provider's key) and the one chat
 * model most gateway tests route to; a test appends its own sections (stacks, projects…).
 */
export const openaiChatYaml = (stubUrl: string) => `${KEYS_YAML}
providers:
  openai: { api_key: "${PROVIDER_KEY}", base_url: "${stubUrl}/v1" }
models:
  llm:
    openai/gpt-4.1-mini: { provider: openai, model: gpt-4.1-mini }
`;

/** A gateway app on a real loopback server: base URL included. */
export async function gatewayApp(yaml: string, env: Record<string, string> = {}): Promise<TestApp & { base: string }> {
  const app = await createTestApp({ yaml, env });
  const base = await app.listen();
  return Object.assign(app, { base });
}

export interface RequestRowView {
  id: string;
  tenant_id: string | null;
  project: string;
  session_id: string | null;
  model_id: string;
  provider: string;
  status: string;
  fallback_from: string | null;
  error_message: string | null;
  input_tokens: number | null;
  output_tokens: number | null;
  cached_input_tokens: number | null;
  audio_seconds: number | null;
  characters: number | null;
  cost_usd: string | null;
  rated_price_usd: string | null;
  ttfb_ms: number | null;
  total_latency_ms: number | null;
  metadata: Record<string, unknown> | null;
}

/** Flushes the recorder and reads every recorded request row, oldest first. */
export async function recordedRows(app: TestApp): Promise<RequestRowView[]> {
  await app.services.gateway.recorder.flush();
  const r = (await app.services.database.db.execute(
    sql`SELECT id, tenant_id, project, session_id, model_id, provider, status, fallback_from, error_message, input_tokens::float8 AS input_tokens,
               output_tokens::float8 AS output_tokens, cached_input_tokens::float8 AS cached_input_tokens, audio_seconds::float8 AS audio_seconds,
               characters::float8 AS characters, cost_usd::text AS cost_usd, rated_price_usd::text AS rated_price_usd,
               ttfb_ms::float8 AS ttfb_ms, total_latency_ms::float8 AS total_latency_ms, metadata
          FROM requests ORDER BY ts, total_latency_ms`,
  )) as unknown as { rows: RequestRowView[] };
  return r.rows;
}
