import { randomUUID } from "node:crypto";
import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { queryRows } from "../../src/db/client.js";
import { requestProjections } from "../../src/compose.js";
import type { RequestRow } from "../../src/rollups/apply.js";
import { createTestDatabase, type TestDatabase } from "../support/db.js";
import { storeRequestRows } from "../support/seed.js";

/**
 * Ingest's fold statement writes the projections' tables in list order (the lock order every writer
 * follows: docs/architecture.md, "Ingest's lock order"; re-rating's adjustRollupMoney takes them in
 * the same order). A BEFORE trigger on each table records when the statement writes it.
 */
describe("ingest's fold statement", () => {
  let tdb: TestDatabase;
  const tables = requestProjections().flatMap((p) => p.fold?.upserts().map((u) => u.name) ?? []);
  beforeAll(async () => {
    tdb = await createTestDatabase();
    const db = tdb.database.db;
    await db.execute(sql`CREATE TABLE fold_log (seq bigserial PRIMARY KEY, tbl text NOT NULL)`);
    await db.execute(sql.raw(`CREATE FUNCTION log_fold() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN INSERT INTO fold_log (tbl) VALUES (TG_TABLE_NAME); RETURN NEW; END $$`));
    for (const t of tables) await db.execute(sql.raw(`CREATE TRIGGER log_fold BEFORE INSERT OR UPDATE ON ${t} FOR EACH ROW EXECUTE FUNCTION log_fold()`));
  });
  afterAll(async () => {
    await tdb.drop();
  });

  it("writes its tables in the projection list's order, on new rows and on stored ones", async () => {
    expect(tables.length).toBeGreaterThan(4);
    const row = (): RequestRow => ({
      id: randomUUID(),
      ts: new Date(),
      modality: "llm",
      model_id: "openai/gpt-4.1-mini",
      provider: "openai",
      project: "fold-order",
      agent_id: "fold-agent",
      ttfb_ms: 100,
      total_latency_ms: 300,
      cost_usd: "0.0010000000",
      rated_price_usd: "0.0020000000",
      rate_rule: "cost_plus:2",
    });
    for (const step of ["new rows", "stored rows"]) {
      await tdb.database.db.execute(sql`TRUNCATE fold_log`);
      expect(await storeRequestRows(tdb.database.db, null, [row(), row()])).toHaveLength(2);
      const log = await queryRows<{ tbl: string }>(tdb.database.db, sql`SELECT tbl FROM fold_log ORDER BY seq`);
      const firstWrites = [...new Set(log.map((l) => l.tbl))];
      expect(firstWrites, step).toEqual(tables);
      // Each table's rows are written together: no table is written again after the next one starts.
      const runs = log.map((l) => l.tbl).filter((t, i, all) => i === 0 || all[i - 1] !== t);
      expect(runs, step).toEqual(tables);
    }
  });
});
