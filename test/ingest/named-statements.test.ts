import { createHash, randomUUID } from "node:crypto";
import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { queryRows } from "../../src/db/client.js";
import { storeRequestRows } from "../support/seed.js";
import type { RequestRow } from "../../src/rollups/apply.js";
import { createTestDatabase, type TestDatabase } from "../support/db.js";

/**
 * The ingest insert and its projections' fold run as NAMED prepared statements (src/db/named.ts): a
 * name must always carry the same text, or a long-lived connection that prepared the old text under
 * that name would run it (and node-postgres refuses a second text under one name). The texts are
 * derived from the Drizzle schema and the projection list, so the name carries the hash of the text:
 * this checks it against the text as Postgres received it, for batches of any shape.
 */
const sha = (text: string) => createHash("sha256").update(text).digest("hex").slice(0, 12);

describe("named prepared statements keep their text", () => {
  let tdb: TestDatabase;
  beforeAll(async () => {
    tdb = await createTestDatabase();
  });
  afterAll(async () => {
    await tdb.drop();
  });

  it("each name carries the hash of its one text, the same for batches of any shape", async () => {
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
      // The second time, the first batch meets its stored ids: the insert that skips them runs too.
      for (const batch of [...batches, batches[0] ?? []]) {
        await storeRequestRows(tx, null, batch);
        const rows = await queryRows<{ name: string; statement: string }>(tx, sql`SELECT name, statement FROM pg_prepared_statements WHERE name LIKE 'voxgate_%'`);
        for (const r of rows) seen.set(r.name, (seen.get(r.name) ?? new Set()).add(r.statement));
      }
    });
    expect([...seen.keys()].map((n) => n.replace(/_[0-9a-f]{12}$/, "")).sort()).toEqual(["voxgate_ingest_attach_turns", "voxgate_ingest_fold", "voxgate_ingest_insert", "voxgate_ingest_insert_new"]);
    for (const [name, texts] of seen) {
      expect(texts.size, name).toBe(1);
      expect(name.endsWith(`_${sha([...texts][0] ?? "")}`), name).toBe(true);
    }
  });
});
