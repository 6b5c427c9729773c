import { randomUUID } from "node:crypto";
import { sql } from "drizzle-orm";
import { beforeAll, describe, expect, it } from "vitest";
import { queryRows } from "../../src/db/client.js";
import { ensureDayPartitions, listDayPartitions, PARTITIONED_TABLES, partitionName } from "../../src/db/partitions.js";
import type { RequestRow } from "../../src/db/schema/requests.js";
import { applyRetention, type RetentionRunResult } from "../../src/retention/apply.js";
import { retentionHorizons } from "../../src/retention/horizons.js";
import { planRetention } from "../../src/retention/plan.js";
import { useTestApp } from "../support/app.js";
import { authYaml, KEYS } from "../support/fixtures.js";
import { seedRequests } from "../support/seed.js";

/**
 * Day partitions (migration 0027, src/db/partitions.ts) and retention dropping them whole, on the real
 * app and database (Postgres, or PGlite when that is the backend): rows of several days land in their
 * day's partition; apply drops the days past the 90-day horizon and keeps the rest; a project's 30-day
 * horizon deletes inside kept partitions; reports keep their totals; a record re-sent after its day
 * was dropped lands in the default partition and goes at the next run.
 */
const DAY = 86_400_000;
const today = Math.floor(Date.now() / DAY) * DAY;
const dayStart = (d: number) => today - d * DAY;
const at = (d: number, hour = 12) => new Date(dayStart(d) + hour * 3_600_000);
const DAYS = [95, 91, 89, 40, 2];
const yaml = `${authYaml("ops", "acmeReader", "acmeIngest")}
projects:
  support: { retention_days: 30 }
  sales: {}
`;

function row(d: number, r: Partial<RequestRow> = {}): RequestRow {
  return {
    id: randomUUID(),
    ts: at(d),
    modality: "llm",
    model_id: "openai/gpt-4.1-mini",
    provider: "openai",
    input_units: 1000,
    output_units: 200,
    cost_usd: "0.0012345678",
    rated_price_usd: "0.0015432098",
    rate_rule: "cost_plus:1.25",
    ...r,
  };
}

// Per day: an acme row with an agent, and an operator row of project `support` and one of `sales`.
const ROWS = DAYS.flatMap((d) => [
  row(d, { tenant_id: "acme", agent_id: "agent-a" }),
  row(d, { tenant_id: null, project: "support", agent_id: "agent-s", session_id: `sess-support-${d}` }),
  row(d, { tenant_id: null, project: "sales", agent_id: "agent-s" }),
]);
const STRADDLE = "sess-straddle-p";
const STRADDLING = [row(91, { session_id: STRADDLE, project: "sales" }), row(89, { session_id: STRADDLE, project: "sales" })];

describe("day partitions", () => {
  const t = useTestApp({ yaml });
  const db = () => t.services.database.db;
  const count = async (q: ReturnType<typeof sql>) => Number((await queryRows<{ n: number }>(db(), sql`SELECT count(*)::int AS n FROM ${q}`))[0]?.n);
  const get = async (path: string) => {
    const res = await t.call("GET", path, { key: KEYS.ops });
    expect(res.status, path).toBe(200);
    return res.json() as Promise<Record<string, unknown>>;
  };
  // Up to today's start: the probe writes made during apply are today's.
  const upToToday = `from=2000-01-01&to=${new Date(today).toISOString()}`;
  const REPORTS = [`/v1/billing/usage?${upToToday}`, `/v1/billing/usage?tenant=acme&${upToToday}`, "/api/agents?period=all"];
  const snapshot = async () => Object.fromEntries(await Promise.all(REPORTS.map(async (p) => [p, await get(p)] as const)));
  let before: Record<string, unknown>;
  let costsBefore: Record<string, unknown>;
  let run: RetentionRunResult;

  beforeAll(async () => {
    for (const d of DAYS) await ensureDayPartitions(db(), new Date(dayStart(d)), new Date(dayStart(d)));
    await seedRequests(db(), [...ROWS, ...STRADDLING]);
    const turns = await t.call("POST", "/v1/ingest/turns", {
      key: KEYS.ops,
      body: DAYS.map((d, i) => ({ session_id: `sess-support-${d}`, turn_index: i, caller_speak_start_ms: at(d).getTime(), caller_speak_end_ms: at(d).getTime() + 900 })),
    });
    expect(((await turns.json()) as { accepted: number }).accepted).toBe(DAYS.length);
    const deadAir = await t.call("POST", "/v1/ingest/dead-air", {
      key: KEYS.ops,
      body: DAYS.map((d) => ({ session_id: `sess-support-${d}`, started_at_ms: at(d).getTime(), duration_ms: 4000, threshold_used_ms: 3000 })),
    });
    expect(((await deadAir.json()) as { accepted: number }).accepted).toBe(DAYS.length);
    for (const d of DAYS) {
      await db().execute(sql`INSERT INTO node_samples (ts, node, source, metric, value) VALUES (${at(d).toISOString()}::timestamptz, 'n1', 'host-exporter', 'cpu', 1)`);
      await db().execute(sql`INSERT INTO call_events (event_id, event, created_at_s) VALUES (${`EV_p_${d}`}, 'room_started', ${Math.floor(at(d).getTime() / 1000)})`);
    }
    before = await snapshot();
    // The fleet index's cached span session counts lost before apply, as happens when the cache write is
    // skipped (SKIP LOCKED while the page's sketch write holds the row: the flake that found this), a new
    // day builds a new span, or a late session bumps the agent's version: counted again after apply,
    // the sessions retention removed must still count.
    await db().execute(sql`UPDATE fleet_index_agent_checkpoints SET sessions = NULL, sessions_version = NULL`);
    costsBefore = await get("/v1/costs?period=all");
  });

  it("rows of several days land in their day's partition (tableoid), none in the default one", async () => {
    for (const { table } of PARTITIONED_TABLES) {
      const rows = await queryRows<{ part: string; n: number }>(db(), sql`SELECT tableoid::regclass::text AS part, count(*)::int AS n FROM ${sql.raw(table)} GROUP BY 1 ORDER BY 1`);
      const names = rows.map((r) => r.part.replaceAll('"', ""));
      expect(names, table).toEqual(DAYS.map((d) => partitionName(table, dayStart(d))).sort());
    }
    expect(await count(sql`requests_default`)).toBe(0);
    const parts = await listDayPartitions(db());
    expect(parts.filter((p) => p.table === "requests" && p.dayMs === null).map((p) => p.name)).toEqual(["requests_default"]);
  });

  it("plan lists each day partition past the horizon with its rows and bytes", async () => {
    const plan = await planRetention(db(), retentionHorizons(t.services.config));
    const requests = plan.tables.find((x) => x.table === "requests");
    expect(requests?.days.map((d) => [d.day, d.partition, d.rows])).toEqual([
      [new Date(dayStart(95)).toISOString().slice(0, 10), partitionName("requests", dayStart(95)), 3],
      [new Date(dayStart(91)).toISOString().slice(0, 10), partitionName("requests", dayStart(91)), 4],
    ]);
    expect(requests?.days.every((d) => d.bytes > 0)).toBe(true);
    expect(plan.tables.find((x) => x.table === "call_events")?.rows).toBe(2);
  });

  it("apply drops the days past the horizon whole, keeps the rest; writes go through between drops", async () => {
    let writes = 0;
    run = await applyRetention(t.services.database, retentionHorizons(t.services.config), {
      onBatch: async () => {
        const res = await t.call("POST", "/v1/ingest", { key: KEYS.ops, body: [{ id: randomUUID(), timestamp: new Date().toISOString(), modality: "llm", model_id: "openai/gpt-4.1-mini", project: "probe-writes", input_tokens: 1, output_tokens: 1, cost_usd: 0 }] });
        expect(((await res.json()) as { accepted: number }).accepted).toBe(1);
        writes++;
      },
    });
    expect(run.ran).toBe(true);
    expect(writes).toBeGreaterThanOrEqual(2 * PARTITIONED_TABLES.length);
    expect(run.dropped.requests?.map((p) => [p.partition, p.rows])).toEqual([
      [partitionName("requests", dayStart(95)), 3],
      [partitionName("requests", dayStart(91)), 4],
    ]);
    const left = new Set((await listDayPartitions(db())).map((p) => p.name));
    for (const { table } of PARTITIONED_TABLES) {
      for (const d of [95, 91]) expect(left.has(partitionName(table, dayStart(d))), `${table} ${d}`).toBe(false);
      for (const d of [89, 40, 2]) expect(left.has(partitionName(table, dayStart(d))), `${table} ${d}`).toBe(true);
      expect(run.dropped[table]?.length, table).toBe(2);
    }
    expect(await count(sql`requests WHERE ts < ${new Date(dayStart(90)).toISOString()}::timestamptz`)).toBe(0);
    expect(await count(sql`node_samples`)).toBe(3);
    expect(await count(sql`call_events WHERE event_id LIKE 'EV_p_%'`)).toBe(3);
  });

  it("a project's shorter horizon deletes its rows inside the kept partitions, other projects' stay", async () => {
    expect(run.projects.support?.requests).toBe(2); // days 89 and 40
    expect(run.projects.support?.turns).toBe(2);
    expect(await count(sql`requests WHERE project = 'support'`)).toBe(1);
    expect(await count(sql`requests WHERE project = 'sales'`)).toBe(4); // days 89, 40, 2 and the straddler's kept half
    expect(await count(sql`turns`)).toBe(1);
    expect(await count(sql`${sql.raw(partitionName("requests", dayStart(40)))}`)).toBe(2);
  });

  it("rollups outlive the dropped days: billing usage, the fleet index and costs answer the same totals", async () => {
    expect(await snapshot()).toEqual(before);
    const costs = await get("/v1/costs?period=all");
    const byProject = (x: Record<string, unknown>) => ({ ...(x.by_project as object), "probe-writes": undefined });
    expect(byProject(costs)).toEqual(byProject(costsBefore));
  });

  it("a session straddling the horizon keeps its ingested totals", async () => {
    const body = (await get(`/v1/sessions/${STRADDLE}`)) as { request_count: number; by_modality: Record<string, { request_count: number }> };
    expect(body.request_count).toBe(2);
    expect(body.by_modality.llm?.request_count).toBe(1);
  });

  it("a record re-sent after its day was dropped lands in the default partition; the next run removes it", async () => {
    const old = ROWS[2] as RequestRow; // day 95, operator's
    const res = await t.call("POST", "/v1/ingest", {
      key: KEYS.ops,
      body: [{ id: old.id, timestamp: (old.ts as Date).toISOString(), modality: "llm", model_id: "openai/gpt-4.1-mini", project: "sales", input_tokens: 1, output_tokens: 1, cost_usd: 0.001 }],
    });
    expect(await res.json()).toMatchObject({ accepted: 1, duplicates: 0 });
    const [where] = await queryRows<{ part: string }>(db(), sql`SELECT tableoid::regclass::text AS part FROM requests WHERE id = ${old.id}`);
    expect(where?.part).toBe("requests_default");
    const again = await applyRetention(t.services.database, retentionHorizons(t.services.config));
    expect(again.deleted.requests).toBe(1);
    expect(again.dropped.requests).toBeUndefined();
  });

  it("metrics: the oldest partition of each table", async () => {
    const text = await (await t.call("GET", "/v1/metrics", { key: KEYS.ops })).text();
    expect(text).toContain(`voxgate_retention_oldest_partition_timestamp_seconds{table="requests"} ${dayStart(89) / 1000}`);
    expect(text).toMatch(/voxgate_raw_table_bytes\{table="requests"\} [1-9]\d*/);
  });
});
