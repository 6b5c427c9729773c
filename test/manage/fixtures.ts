import { randomUUID } from "node:crypto";
import type { Db } from "../../src/db/client.js";
import { requests } from "../../src/db/schema/index.js";

export const ADMIN = "ops-admin-key-0123456789";
export const READER = "reader-key-0123456789";
export const WRITER = "writer-key-0123456789";
export const INGESTER = "ingest-key-0123456789";
export const ACME_WRITER = "acme-writer-key-0123456789";
export const ACME_READER = "acme-reader-key-0123456789";
export const SECRET_ENV = { VOXGATE_SECRET: "test-secret-for-provider-keys-0123456789" };

export const OPENAI_KEY = "sk-yaml-openai-abcdefghijklmnop";

export function manageYaml(extra = ""): string {
  return `
auth:
  api_keys:
    - ${ADMIN}
    - { key: ${READER}, scopes: [read] }
    - { key: ${WRITER}, scopes: [read, write] }
    - { key: ${INGESTER}, scopes: [ingest] }
    - { key: ${ACME_WRITER}, scopes: [read, write], tenant_id: acme }
    - { key: ${ACME_READER}, scopes: [read], tenant_id: acme }
providers:
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

export async function insertRequest(
  db: Db,
  row: { project: string; cost: string | null; tenantId?: string | null; ageSeconds?: number; provider?: string; modelId?: string },
): Promise<void> {
  const provider = row.provider ?? "openai";
  await db.insert(requests).values({
    id: randomUUID(),
    ts: new Date(Date.now() - (row.ageSeconds ?? 60) * 1000),
    tenantId: row.tenantId ?? null,
    project: row.project,
    modality: "llm",
    modelId: row.modelId ?? `${provider}/gpt-4.1-mini`,
    provider,
    costUsd: row.cost,
  });
}

export async function json<T = Record<string, unknown>>(res: Response): Promise<T> {
  return (await res.json()) as T;
}
