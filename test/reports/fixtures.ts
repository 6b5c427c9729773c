import { randomUUID } from "node:crypto";
import type { Db } from "../../src/db/client.js";
import { storeRequestRows } from "../../src/ingest/store-requests.js";
import type { RequestRow } from "../../src/rollups/apply.js";

export const KEYS = {
  ops: "ops-key-0123456789",
  acme: "acme-read-key-0123",
  globex: "globex-read-key-012",
  ingestOnly: "ingest-only-key-01",
};

/** Auth on: an operator key, two tenant read keys and a key without read scope. */
export const REPORTS_YAML = `
providers:
  openai: { api_key: sk-test-openai }
  deepgram: { api_key: dg-test }
  elevenlabs: {}
auth:
  api_keys:
    - ${KEYS.ops}
    - { key: ${KEYS.acme}, scopes: [read], tenant_id: acme }
    - { key: ${KEYS.globex}, scopes: [read], tenant_id: globex }
    - { key: ${KEYS.ingestOnly}, scopes: [ingest] }
`;

/** A request row as ingest would build it; `agoMs` before `now`. */
export function row(over: Partial<RequestRow> & { agoMs: number; now?: number }): RequestRow {
  const { agoMs, now, ...rest } = over;
  const model_id = rest.model_id ?? "openai/gpt-4.1-mini";
  return {
    id: randomUUID(),
    ts: new Date((now ?? Date.now()) - agoMs),
    modality: "llm",
    model_id,
    provider: model_id.split("/")[0] ?? "openai",
    ...rest,
  };
}

/**
 * Stores rows through ingest's own write path (`storeRequestRows`: insert, sessions upsert, probe
 * marking, rollups in one transaction), one batch per tenant as ingest calls it.
 */
export async function insertRequests(db: Db, rows: RequestRow[]): Promise<void> {
  const byTenant = new Map<string | null, RequestRow[]>();
  for (const r of rows) {
    const tenant = r.tenant_id ?? null;
    byTenant.set(tenant, [...(byTenant.get(tenant) ?? []), r]);
  }
  for (const [tenant, batch] of byTenant) await storeRequestRows(db, tenant, batch);
}

export const MIN = 60_000;
export const HOUR = 3_600_000;
export const DAY = 86_400_000;
