import { randomUUID } from "node:crypto";
import { sql } from "drizzle-orm";
import type { Db } from "../../src/db/client.js";

export const OPS = "ops-key-0123456789abcdef";
export const READER = "reader-key-0123456789abcdef";
export const ACME = "acme-ingest-key-0123456789";
export const GLOBEX = "globex-ingest-key-0123456789";

/** Auth on: an operator key, a read-only key, and two tenants' ingest keys. */
export const AUTH_YAML = `
auth:
  api_keys:
    - ${OPS}
    - { key: ${READER}, scopes: [read] }
    - { key: ${ACME}, scopes: [ingest, read], tenant_id: acme }
    - { key: ${GLOBEX}, scopes: [write, read], tenant_id: globex }
rate_card:
  default_markup: 1.5
`;

export function record(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    id: randomUUID(),
    timestamp: new Date().toISOString(),
    modality: "llm",
    model_id: "openai/gpt-4.1-mini",
    input_tokens: 100,
    output_tokens: 20,
    cost_usd: 0.001,
    ...overrides,
  };
}

export async function rows<T = Record<string, unknown>>(db: Db, query: ReturnType<typeof sql>): Promise<T[]> {
  const r = (await db.execute(query)) as unknown as { rows: T[] };
  return r.rows;
}

export async function countOf(db: Db, table: string): Promise<number> {
  const [r] = await rows<{ n: string }>(db, sql.raw(`SELECT count(*)::text AS n FROM ${table}`));
  return Number(r?.n ?? 0);
}
