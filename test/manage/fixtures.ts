import { randomUUID } from "node:crypto";
import type { Db } from "../../src/db/client.js";
import { authYaml, KEYS, SECRET_ENV } from "../support/fixtures.js";
import { seedRequests } from "../support/seed.js";

export const ADMIN = KEYS.ops;
export const READER = KEYS.reader;
export const WRITER = KEYS.writer;
export const INGESTER = KEYS.ingest;
export const ACME_WRITER = KEYS.acmeWriter;
export const ACME_READER = KEYS.acmeReader;
export { SECRET_ENV };

export const OPENAI_KEY = "sk-yaml-openai-abcdefghijklmnop";

export function manageYaml(extra = ""): string {
  return `
${authYaml("ops", "reader", "writer", "ingest", "acmeWriter", "acmeReader")}providers:
  openai: { api_key: "${OPENAI_KEY}" }
  deepgram: {}
  gpu-box: { type: openai_compatible, base_url: "http://10.0.0.7:8000/v1" }
models:
  stt: { deepgram/nova-3: { provider: deepgram, model: nova-3 } }
  llm: { openai/gpt-4.1-mini: { provider: openai, model: gpt-4.1-mini } }
  tts: {}
stacks:
  fast: { stt: deepgram/nova-3, llm: openai/gpt-4.1-mini }
projects:
  support: { name: Support line, daily_budget: 25, budget_action: block, default_stack: fast, tags: [prod] }
fallbacks:
  llm: [openai/gpt-4.1-mini, gpu-box/llama-3.1-8b]
${extra}`;
}

/** One LLM request stored through ingest's write path (test/support/seed.ts), `ageSeconds` ago. */
export async function insertRequest(
  db: Db,
  row: { project: string; cost: string | null; tenantId?: string | null; ageSeconds?: number; provider?: string; modelId?: string },
): Promise<void> {
  const provider = row.provider ?? "openai";
  await seedRequests(db, [
    {
      id: randomUUID(),
      ts: new Date(Date.now() - (row.ageSeconds ?? 60) * 1000),
      tenant_id: row.tenantId ?? null,
      project: row.project,
      modality: "llm",
      model_id: row.modelId ?? `${provider}/gpt-4.1-mini`,
      provider,
      cost_usd: row.cost,
    },
  ]);
}

export async function json<T = Record<string, unknown>>(res: Response): Promise<T> {
  return (await res.json()) as T;
}
