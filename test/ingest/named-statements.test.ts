import { createHash, randomUUID } from "node:crypto";
import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { queryRows } from "../../src/db/client.js";
import { storeRequestRows } from "../../src/ingest/store-requests.js";
import type { RequestRow } from "../../src/rollups/apply.js";
import { createTestDatabase, type TestDatabase } from "../support/db.js";

/**
 * The ingest insert and the rollup upsert run as NAMED prepared statements (src/db/named.ts): a name
 * must always carry the same text, or a long-lived connection that prepared the old text under that
 * name would run it (and node-postgres refuses a second text under one name). The texts are derived
 * from the Drizzle schema, so a schema edit can change them: this pins each name's text. When this
 * fails, bump the name's suffix in the source and pin the new text's hash here.
 */
const PINNED: Record<string, string> = {
  voxgate_ingest_requests_v7: "5dcbc9d661a74db2",
  voxgate_rollups_upsert_v4: "cdaeb144e7a87187",
};

const sha = (text: string) => createHash("sha256").update(text).digest("hex").slice(0, 16);

describe("named prepared statements keep their text", () => {
  let tdb: TestDatabase;
  beforeAll(async () => {
    tdb = await createTestDatabase();
  });
  afterAll(async () => {
    await tdb.drop();
  });

  it("every name's text is pinned, and the same for batches of any shape", async () => {
    if (tdb.url === null) return; // PGlite ignores statement names
    const seen = new Map<string, Set<string>>();
    await tdb.database.db.transaction(async (tx) => {
      const batches: RequestRow[][] = [
        [{ id: randomUUID(), ts: new Date(), modality: "llm", model_id: "openai/gpt-4.1-mini", provider: "openai" }],
        Array.from({ length: 3 }, (_, i) => ({
          id: randomUUID(),
          ts: new Date(Date.now() - i * 86_400_000),
          modality: i === 0 ? "stt" : "tts",
          model_id: "deepgram/nova-3",
          provider: "deepgram",
          project: `p${i}`,
          session_id: "s1",
          // One row names an agent: the per-agent upserts are in the same statement, text unchanged.
          agent_id: i === 1 ? "agent-1" : null,
          ttfb_ms: 100 + i,
          cost_usd: "0.001",
        })),
      ];
      for (const batch of batches) {
        await storeRequestRows(tx, null, batch);
        const rows = await queryRows<{ name: string; statement: string }>(tx, sql`SELECT name, statement FROM pg_prepared_statements WHERE name LIKE 'voxgate_%'`);
        for (const r of rows) seen.set(r.name, (seen.get(r.name) ?? new Set()).add(r.statement));
      }
    });
    const hashes = Object.fromEntries([...seen].map(([name, texts]) => [name, [...texts].map(sha)]));
    expect(hashes).toEqual(Object.fromEntries(Object.entries(PINNED).map(([name, h]) => [name, [h]])));
  });
});
