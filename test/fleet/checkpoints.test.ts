import { randomUUID } from "node:crypto";
import { sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { queryRows } from "../../src/db/client.js";
import { storeRequestRows } from "../support/seed.js";
import type { RequestRow } from "../../src/rollups/apply.js";
import { DAY_MS, HOUR_MS } from "../../src/rollups/buckets.js";
import { dropCheckpointsAfter, ensureCheckpoints } from "../../src/rollups/fleet-checkpoints.js";
import { useTestApp } from "../support/app.js";

const TENANTS = [null, "acme"] as const;
const today = Math.floor(Date.now() / DAY_MS) * DAY_MS;
/**
 * The checkpoint spans the test builds, rebuilds and checks: unbounded ones, 7- and 30-day ones, and
 * ones starting inside a day (a ranking's, from its window's first hour: late rows of that day fold
 * in by the hour).
 */
const DAYS = [40, 30, 21, 14, 7, 3, 1].flatMap((d) => {
  const at = today - d * DAY_MS;
  return [
    { from: null, at: new Date(at) },
    { from: new Date(at - 7 * DAY_MS), at: new Date(at) },
    { from: new Date(at - 30 * DAY_MS), at: new Date(at) },
    { from: new Date(at - 7 * DAY_MS + ((d * 5) % 23) * HOUR_MS + HOUR_MS), at: new Date(at) },
    { from: new Date(at - DAY_MS + 14 * HOUR_MS), at: new Date(at) },
  ];
});

let seq = 0;
function lateRow(tenantId: string | null, agent: number, daysAgo: number): RequestRow {
  seq++;
  return {
    id: randomUUID(),
    ts: new Date(today - daysAgo * DAY_MS + ((seq * 7919) % DAY_MS)),
    tenant_id: tenantId,
    agent_id: `agent-${agent}`,
    session_id: null,
    model_id: "openai/gpt-4.1-mini",
    modality: "llm",
    provider: "openai",
    status: seq % 5 === 0 ? "error" : "success",
    cost_usd: `${seq % 97}.0000000001`,
    rated_price_usd: `${seq % 13}.5000000003`,
    ttfb_ms: 200,
    is_probe: seq % 7 === 0,
  };
}

/**
 * The running totals stay exact while they are built, dropped and built again concurrently with
 * writers of rows dated before them (the advisory-lock handshake in src/rollups/fleet-checkpoints.ts):
 * every built checkpoint equals the sums of the raw rows dated before it.
 */
describe("fleet-index checkpoints under concurrent late writers", () => {
  const t = useTestApp();

  it("equal the raw sums after builds and late batches race", async () => {
    const db = t.services.database.db;
    for (let round = 0; round < 6; round++) {
      const writers = Array.from({ length: 4 }, (_, w) => {
        const tenant = TENANTS[w % 2] ?? null;
        const rows = Array.from({ length: 40 }, (_, i) => lateRow(tenant, (i + w + round) % 9, 1 + ((i * 5 + w + round) % 44)));
        return storeRequestRows(db, tenant, rows);
      });
      const builders = [
        ensureCheckpoints(db, DAYS.slice(round % 3)),
        (async () => {
          await dropCheckpointsAfter(db, new Date(today - (10 + round * 5) * DAY_MS));
          await ensureCheckpoints(db, DAYS);
        })(),
      ];
      await Promise.all([...writers, ...builders]);
    }
    await ensureCheckpoints(db, DAYS);
    const diff = await queryRows<{ at: Date; tenant_id: string | null; agent_id: string; got: string | null; want: string | null }>(
      db,
      sql`WITH want AS (
          SELECT k.at, r.tenant_id, r.agent_id, k.from_at, count(*) AS requests, sum(coalesce(r.cost_usd, 0)) AS cost_usd, count(*) AS row_count,
                 count(*) FILTER (WHERE r.is_probe) AS probe_requests, count(*) FILTER (WHERE r.status = 'error' AND NOT r.is_probe) AS errors,
                 sum(coalesce(r.rated_price_usd, 0)) AS rated_price_usd
            FROM fleet_index_checkpoints k JOIN requests r ON r.ts < k.at AND r.ts >= k.from_at GROUP BY k.from_at, 1, 2, 3
        ), got AS (SELECT * FROM fleet_index_agent_checkpoints)
        SELECT coalesce(g.at, w.at) AS at, coalesce(g.tenant_id, w.tenant_id) AS tenant_id, coalesce(g.agent_id, w.agent_id) AS agent_id,
               (g.requests, g.cost_usd, g.row_count, g.probe_requests, g.errors, g.rated_price_usd, g.turns, g.probe_turns)::text AS got,
               (w.requests, w.cost_usd, w.row_count, w.probe_requests, w.errors, w.rated_price_usd, 0, 0)::text AS want
          FROM got g FULL JOIN want w ON g.from_at = w.from_at AND g.at = w.at AND coalesce(g.tenant_id, '-') = coalesce(w.tenant_id, '-') AND g.agent_id = w.agent_id
         WHERE g.at IS NULL OR w.at IS NULL
            OR (g.requests, g.cost_usd, g.row_count, g.probe_requests, g.errors, g.rated_price_usd, g.turns, g.probe_turns)
               <> (w.requests, w.cost_usd, w.row_count, w.probe_requests, w.errors, w.rated_price_usd, 0, 0)`,
    );
    expect(diff).toEqual([]);
    const built = await queryRows<{ n: string }>(db, sql`SELECT count(*) AS n FROM fleet_index_agent_checkpoints`);
    expect(Number(built[0]?.n)).toBeGreaterThan(DAYS.length * 9);
  });

  it("drop a span starting inside a day once it was built long ago, never one still wanted", async () => {
    const db = t.services.database.db;
    const at = new Date(today);
    const hourSpan = (h: number) => ({ from: new Date(today - DAY_MS + h * HOUR_MS), at });
    const spans = async () =>
      (await queryRows<{ h: string }>(db, sql`SELECT extract(epoch FROM from_at - ${at.toISOString()}::timestamptz + interval '1 day')::bigint / 3600 AS h
          FROM fleet_index_checkpoints WHERE at = ${at.toISOString()}::timestamptz AND from_at > '-infinity' ORDER BY 1`)).map((r) => Number(r.h));
    const wall = today + 20 * HOUR_MS;
    await ensureCheckpoints(db, [hourSpan(5)], wall - 3 * HOUR_MS);
    await ensureCheckpoints(db, [hourSpan(6)], wall - 90 * 60_000);
    await ensureCheckpoints(db, [hourSpan(7), { from: new Date(today - 7 * DAY_MS), at }], wall - 3 * HOUR_MS);
    expect(await spans()).toEqual([-144, 5, 6, 7]);
    // Built 3 hours ago: 5 goes; 6 (90 minutes) stays; 7 is wanted again; a day-start span stays.
    await ensureCheckpoints(db, [hourSpan(7), hourSpan(8)], wall);
    expect(await spans()).toEqual([-144, 6, 7, 8]);
    const rows = await queryRows<{ n: string }>(
      db,
      sql`SELECT count(*) AS n FROM fleet_index_agent_checkpoints c
           WHERE NOT EXISTS (SELECT 1 FROM fleet_index_checkpoints k WHERE k.from_at = c.from_at AND k.at = c.at)`,
    );
    expect(Number(rows[0]?.n)).toBe(0);
  });
});
