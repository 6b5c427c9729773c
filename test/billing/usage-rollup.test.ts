import { randomUUID } from "node:crypto";
import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { compileCatalog } from "../../src/billing/catalog.js";
import { compileRateCard, seedRule } from "../../src/billing/rate.js";
import { rerateWindow } from "../../src/billing/rerate.js";
import { toRuleDef } from "../../src/billing/rule-form.js";
import { usageByTenant, usageLineItems } from "../../src/billing/usage.js";
import { queryRows } from "../../src/db/client.js";
import type { RequestRow } from "../../src/db/schema/requests.js";
import { rebuildBillingUsage } from "../../src/rollups/billing-usage.js";
import { createTestDatabase, type TestDatabase } from "../support/db.js";
import { seedRequests } from "../support/seed.js";

/**
 * The billing usage rollup equals raw rows at every step: as ingest folds batches in, after a re-rate
 * moves rows between rules (and from unpriced to priced), and rebuilt in SQL from raw rows.
 */
const FROM = new Date("2026-10-01T00:00:00Z");
const TO = new Date("2026-11-01T00:00:00Z");

const stored = (db: TestDatabase["database"]["db"]) =>
  queryRows<Record<string, unknown>>(
    db,
    sql`SELECT bucket, tenant_id, modality, model_id, rate_rule, requests::int, rated_price_usd::text, cost_usd::text, unpriced::int, uncosted::int,
          input_units::text, output_units::text FROM billing_usage_daily ORDER BY 1, 2, 3, 4, 5`,
  );

describe("billing usage rollup", () => {
  let tdb: TestDatabase;
  const rows: RequestRow[] = [];
  beforeAll(async () => {
    tdb = await createTestDatabase();
    for (let i = 0; i < 60; i++) {
      rows.push({
        id: randomUUID(),
        ts: new Date(Date.UTC(2026, 9, 1 + (i % 31), i % 24, 7)),
        tenant_id: i % 3 === 0 ? null : i % 3 === 1 ? "acme" : "globex",
        modality: i % 2 === 0 ? "stt" : "llm",
        model_id: i % 2 === 0 ? "deepgram/nova-3" : "mystery/x",
        provider: i % 2 === 0 ? "deepgram" : "mystery",
        pricing: i % 2 === 0 ? "priced" : "unknown",
        cost_usd: i % 2 === 0 ? "0.0100000001" : null,
        rated_price_usd: i % 2 === 0 ? "0.0125000001" : null,
        rate_rule: i % 2 === 0 ? "cost_plus:1.25" : null,
        audio_seconds: i % 2 === 0 ? 60 : null,
        input_tokens: i % 2 === 0 ? null : 1000,
        input_units: i % 2 === 0 ? 1 + i / 8 : 1000,
        output_units: i % 2 === 0 ? null : 17,
      });
    }
    // Several batches, as ingest writes them.
    for (let i = 0; i < rows.length; i += 7) await seedRequests(tdb.database.db, rows.slice(i, i + 7));
  });
  afterAll(async () => {
    await tdb.drop();
  });

  it("ingest's rollup equals the rollup rebuilt from raw rows; usage read from it equals the raw sums", async () => {
    const db = tdb.database.db;
    const folded = await stored(db);
    await rebuildBillingUsage(db, FROM, TO);
    expect(await stored(db)).toEqual(folded);
    const [raw] = await queryRows<{ revenue: string; n: number; unpriced: number }>(
      db,
      sql`SELECT coalesce(sum(rated_price_usd), 0)::text AS revenue, count(*)::int AS n, (count(*) FILTER (WHERE rated_price_usd IS NULL))::int AS unpriced FROM requests`,
    );
    const { total } = await usageByTenant(db, { tenantId: null, from: FROM, to: TO });
    expect(total.requests).toBe(raw?.n);
    expect(Number(total.revenue)).toBe(Number(raw?.revenue));
    expect(total.unpriced).toBe(raw?.unpriced);
  });

  it("a window cut inside days reads its edges from raw rows, the same as the raw sums", async () => {
    const db = tdb.database.db;
    const from = new Date("2026-10-03T05:30:00Z");
    const to = new Date("2026-10-20T13:00:00Z");
    const [raw] = await queryRows<{ n: number; units: number }>(
      db,
      sql`SELECT count(*)::int AS n, coalesce(sum(input_units), 0)::float8 AS units FROM requests WHERE tenant_id = 'acme' AND ts >= ${from.toISOString()}::timestamptz AND ts < ${to.toISOString()}::timestamptz`,
    );
    const items = await usageLineItems(db, { tenantId: null, tenant: "acme", from, to });
    expect(items.reduce((a, i) => a + i.requests, 0)).toBe(raw?.n);
    expect(items.reduce((a, i) => a + i.inputUnits, 0)).toBeCloseTo(raw?.units ?? -1, 9);
  });

  it("re-rating moves rows between rules and out of unpriced; the rollup still equals its rebuild", async () => {
    const db = tdb.database.db;
    const card = compileRateCard(1.25, [
      seedRule(toRuleDef({ sets: "price", modality: "stt", markup: 2 })),
      seedRule(toRuleDef({ sets: "price", model: "mystery/x", fixed: 0.001, unit: "request" })),
    ]);
    const report = await rerateWindow(db, { card, catalog: compileCatalog({}) }, { from: FROM, to: TO, apply: true, batchSize: 11 });
    expect(report.changed).toBe(60);
    const adjusted = await stored(db);
    expect(adjusted.some((r) => r.rate_rule === "cost_plus:1.25")).toBe(false);
    expect(adjusted.every((r) => r.unpriced === 0)).toBe(true);
    await rebuildBillingUsage(db, FROM, TO);
    expect(adjusted).toEqual(await stored(db));
  });
});
