import { randomUUID } from "node:crypto";
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

/** Reports seed through ingest's own write path (test/support/seed.ts). */
export { seedRequests as insertRequests } from "../support/seed.js";

export const MIN = 60_000;
export const HOUR = 3_600_000;
export const DAY = 86_400_000;
