import { execFile } from "node:child_process";
import { randomUUID } from "node:crypto";
import { promisify } from "node:util";
import { eq, sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { compileCatalog } from "../../src/billing/catalog.js";
import { compileRateCard, seedRule } from "../../src/billing/rate.js";
import { rerateWindow } from "../../src/billing/rerate.js";
import { toRuleDef } from "../../src/billing/rule-form.js";
import { queryRows } from "../../src/db/client.js";
import { requests } from "../../src/db/schema/index.js";
import { storeRequestRows } from "../support/seed.js";
import { ROLLUP_GRAINS } from "../../src/rollups/apply.js";
import { createTestDatabase, type TestDatabase } from "../support/db.js";

const catalog = compileCatalog({});
const window = { from: new Date("2026-10-01T00:00:00Z"), to: new Date("2026-11-01T00:00:00Z") };

describe("re-rating a window (voxgate rates rerate)", () => {
  let tdb: TestDatabase;
  beforeAll(async () => {
    tdb = await createTestDatabase();
    const db = tdb.database.db;
    // Operator (untenanted) rows: their recorded cost is the basis (tenant-bound rows use the collector's own cost, see rate.test.ts).
    const base = { ts: new Date("2026-10-05T10:15:00Z"), provider: "deepgram", modality: "stt", model_id: "deepgram/nova-3", tenant_id: null, project: "default" };
    // Rated at write time with the default markup 1.25 over a $0.01 cost.
    const rows = [
      { ...base, id: randomUUID(), cost_usd: "0.01", rated_price_usd: "0.0125", rate_rule: "cost_plus:1.25", audio_seconds: 60 },
      { ...base, id: randomUUID(), cost_usd: "0.01", rated_price_usd: "0.0125", rate_rule: "cost_plus:1.25", audio_seconds: 60 },
      // outside the window
      { ...base, id: randomUUID(), ts: new Date("2026-11-02T00:00:00Z"), cost_usd: "0.01", rated_price_usd: "0.0125", rate_rule: "cost_plus:1.25" },
      // recorded unknown, now priceable by a rule
      { ...base, id: randomUUID(), modality: "llm", model_id: "mystery/x", provider: "mystery", pricing: "unknown", input_tokens: 1000 },
    ];
    // Stored and rolled up through ingest's own write path, into every rollup table.
    await storeRequestRows(db, null, rows);
  });
  afterAll(async () => {
    await tdb.drop();
  });

  const newCard = () =>
    compileRateCard(1.25, [
      seedRule(toRuleDef({ sets: "price", modality: "stt", markup: 2 })),
      seedRule(toRuleDef({ sets: "price", model: "mystery/x", fixed: 0.001, unit: "request" })),
    ]);

  it("a dry run reports the difference and writes nothing", async () => {
    const progress: number[] = [];
    const report = await rerateWindow(tdb.database.db, { card: newCard(), catalog }, { ...window, batchSize: 1, onProgress: (d) => progress.push(d) });
    expect(report).toMatchObject({
      applied: false,
      rows: 3,
      changed: 3,
      pricing_changes: 1,
      old_rated_total_usd: "0.025",
      new_rated_total_usd: "0.041",
      difference_usd: "0.016",
    });
    expect(report.by_rule).toEqual([
      { from: "cost_plus:1.25", to: "cost_plus:2", rows: 2, difference_usd: "0.015" },
      { from: null, to: "fixed:0.001/request", rows: 1, difference_usd: "0.001" },
    ]);
    expect(progress).toEqual([0, 1, 2, 3]);
    const stored = await tdb.database.db.select().from(requests).where(eq(requests.rateRule, "cost_plus:2"));
    expect(stored).toHaveLength(0);
  });

  it("--apply stores the new ratings and moves the same delta into every rollup table", async () => {
    const report = await rerateWindow(tdb.database.db, { card: newCard(), catalog }, { ...window, apply: true });
    expect(report).toMatchObject({ applied: true, changed: 3 });
    const db = tdb.database.db;
    const [sum] = await db
      .select({ total: sql<string>`sum(${requests.ratedPriceUsd})::text` })
      .from(requests)
      .where(sql`${requests.ts} >= '2026-10-01' and ${requests.ts} < '2026-11-01'`);
    expect(Number(sum?.total)).toBe(0.041);
    const [mystery] = await db.select().from(requests).where(eq(requests.modelId, "mystery/x"));
    expect(mystery).toMatchObject({ pricing: "priced", rateRule: "fixed:0.001/request" });
    const [raw] = await queryRows<{ price: string; cost: string }>(
      db,
      sql`select sum(rated_price_usd)::text as price, sum(cost_usd)::text as cost from requests`,
    );
    for (const grain of ROLLUP_GRAINS) {
      const [rolled] = await queryRows<{ price: string; cost: string }>(
        db,
        sql`select sum(rated_price_usd)::text as price, sum(cost_usd)::text as cost from ${sql.raw(grain.table)}`,
      );
      expect(Number(rolled?.price), grain.table).toBe(Number(raw?.price));
      expect(Number(rolled?.cost), grain.table).toBe(Number(raw?.cost));
    }
    // Idempotent: a second run finds nothing to change.
    expect((await rerateWindow(db, { card: newCard(), catalog }, window)).changed).toBe(0);
  });


  it("the CLI command runs a dry run with a report on stdout", async () => {
    if (!tdb.url) return; // the CLI opens its own connection: Postgres only (PGlite memory DBs are per process)
    const run = promisify(execFile);
    const { stdout } = await run(
      process.execPath,
      ["--import", "tsx", "src/cli/main.ts", "rates", "rerate", "--from", "2026-10-01", "--to", "2026-11-01", "--no-progress"],
      { env: { ...withoutConfig(), DATABASE_URL: tdb.url, HOME: "/nonexistent" }, timeout: 60_000 },
    );
    const report = JSON.parse(stdout) as { applied: boolean; rows: number };
    expect(report.applied).toBe(false);
    expect(report.rows).toBe(3);
  });
});

function withoutConfig(): NodeJS.ProcessEnv {
  const { VOXGATE_CONFIG: _, ...rest } = process.env;
  return rest;
}
