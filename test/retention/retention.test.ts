import { randomUUID } from "node:crypto";
import { sql } from "drizzle-orm";
import { beforeAll, describe, expect, it } from "vitest";
import { rerateWindow } from "../../src/billing/rerate.js";
import { queryRows } from "../../src/db/client.js";
import type { RequestRow } from "../../src/db/schema/requests.js";
import { DomainError } from "../../src/errors.js";
import { applyRetention, RETENTION_LOCK_KEY } from "../../src/retention/apply.js";
import { retentionHorizons } from "../../src/retention/horizons.js";
import { planRetention } from "../../src/retention/plan.js";
import { cachedTableSizes } from "../../src/retention/stats.js";
import { useTestApp } from "../support/app.js";
import { authYaml, KEYS } from "../support/fixtures.js";
import { seedRequests } from "../support/seed.js";

/**
 * Retention end to end on the real app and database (Postgres, or PGlite when that is the backend):
 * the default 90-day raw horizon, a project with 30 days, and every report that must keep its totals
 * after the raw rows of a window are gone. Dates are relative to the real clock, as the server's are.
 */
const DAY = 86_400_000;
const today = Math.floor(Date.now() / DAY) * DAY;
const daysAgo = (d: number, hour = 12) => new Date(today - d * DAY + hour * 3_600_000);
const rawCutoff = new Date(today - 90 * DAY);
const supportCutoff = new Date(today - 30 * DAY);
// A whole UTC calendar month before the 90-day horizon: its raw rows all go.
const cut = new Date(rawCutoff);
const oldMonthFrom = new Date(Date.UTC(cut.getUTCFullYear(), cut.getUTCMonth() - 1, 1));
const oldMonthTo = new Date(Date.UTC(cut.getUTCFullYear(), cut.getUTCMonth(), 1));
const inOldMonth = (day: number) => new Date(oldMonthFrom.getTime() + (day - 1) * DAY + 9 * 3_600_000);

const yaml = `${authYaml("ops", "acmeReader", "acmeIngest")}
projects:
  support: { retention_days: 30 }
  sales: {}
`;

function row(r: Partial<RequestRow> & { ts: Date }): RequestRow {
  return {
    id: randomUUID(),
    modality: "llm",
    model_id: "openai/gpt-4.1-mini",
    provider: "openai",
    status: "success",
    pricing: "priced",
    input_units: 1000,
    output_units: 200,
    cost_usd: "0.0012345678",
    rated_price_usd: "0.0015432098",
    rate_rule: "cost_plus:1.25",
    ...r,
  };
}

const OLD = [
  row({ ts: inOldMonth(3), tenant_id: "acme", agent_id: "agent-a" }),
  row({ ts: inOldMonth(3), tenant_id: "acme", agent_id: "agent-a", modality: "tts", model_id: "elevenlabs/eleven_flash_v2_5", provider: "elevenlabs", rate_rule: "fixed:0.3/1k_char", rated_price_usd: "0.3", cost_usd: "0.05" }),
  row({ ts: inOldMonth(10), tenant_id: "acme", agent_id: "agent-b", rated_price_usd: null, rate_rule: null, pricing: "unknown", cost_usd: null }),
  row({ ts: inOldMonth(20), tenant_id: "globex", agent_id: "agent-g", cost_usd: "0.2", rated_price_usd: "0.3" }),
  row({ ts: inOldMonth(20), tenant_id: null, project: "support", agent_id: "agent-s" }),
];
// A session straddling the horizon: its first request before it, its last after.
const STRADDLE = "sess-straddle";
const STRADDLING = [
  row({ ts: daysAgo(91), tenant_id: null, session_id: STRADDLE, project: "sales", agent_id: "agent-s" }),
  row({ ts: daysAgo(89), tenant_id: null, session_id: STRADDLE, project: "sales", agent_id: "agent-s" }),
];
// Between the two horizons: support's go, sales' stay.
const MIDDLE = [
  row({ ts: daysAgo(40), tenant_id: null, project: "support", session_id: "sess-support-old", agent_id: "agent-s" }),
  row({ ts: daysAgo(40), tenant_id: null, project: "sales", session_id: "sess-sales-mid", agent_id: "agent-s" }),
];
const RECENT = [
  row({ ts: daysAgo(0, 0), tenant_id: "acme", agent_id: "agent-a" }),
  row({ ts: daysAgo(2), tenant_id: null, project: "support", session_id: "sess-support-new", agent_id: "agent-s" }),
];

describe("retention", () => {
  const t = useTestApp({ yaml });
  const db = () => t.services.database.db;
  const get = async (path: string) => {
    const res = await t.call("GET", path, { key: KEYS.ops });
    expect(res.status, path).toBe(200);
    return res.json() as Promise<Record<string, unknown>>;
  };
  const REPORTS = [
    "/v1/costs?period=all",
    `/v1/billing/usage?from=${oldMonthFrom.toISOString()}&to=${oldMonthTo.toISOString()}`,
    `/v1/billing/usage?tenant=acme&from=${oldMonthFrom.toISOString()}&to=${oldMonthTo.toISOString()}`,
    "/v1/billing/usage?tenant=acme&from=2000-01-01&to=2100-01-01",
    "/api/costs/series?period=all&bucket=day",
    "/api/agents?period=all",
    "/v1/projects/support",
  ];
  const snapshot = async () => Object.fromEntries(await Promise.all(REPORTS.map(async (p) => [p, await get(p)] as const)));
  const count = async (table: string, where = sql`true`) =>
    Number((await queryRows<{ n: number }>(db(), sql`SELECT count(*)::int AS n FROM ${sql.raw(table)} WHERE ${where}`))[0]?.n);
  let before: Record<string, unknown>;

  beforeAll(async () => {
    await seedRequests(db(), [...OLD, ...STRADDLING, ...MIDDLE, ...RECENT]);
    // Operator turns of the straddling session: one before the horizon, one after.
    const res = await t.call("POST", "/v1/ingest/turns", {
      key: KEYS.ops,
      body: [daysAgo(91), daysAgo(89)].map((d, i) => ({
        session_id: STRADDLE,
        turn_index: i,
        caller_speak_start_ms: d.getTime(),
        caller_speak_end_ms: d.getTime() + 1000,
        response_speed_ms: 500,
      })),
    });
    expect(((await res.json()) as { accepted: number }).accepted).toBe(2);
    before = await snapshot();
  });

  it("defaults: 90 days raw, 800 rollups, 400 audit, hourly; a project's shorter horizon", () => {
    expect(t.services.config.retention).toEqual({ raw_days: 90, rollup_days: 800, audit_days: 400, interval_minutes: 60 });
    const h = retentionHorizons(t.services.config);
    expect(h.byClass.raw).toEqual(rawCutoff);
    expect(h.projects).toEqual([{ project: "support", before: supportCutoff }]);
  });

  it("plan lists, per table and day, what apply removes, and writes nothing", async () => {
    const plan = await planRetention(db(), retentionHorizons(t.services.config));
    const requests = plan.tables.find((x) => x.table === "requests");
    expect(requests?.rows).toBe(OLD.length + 1);
    expect(requests?.days.map((d) => d.day)).toEqual(
      [...new Set([...OLD, STRADDLING[0] as RequestRow].map((r) => (r.ts as Date).toISOString().slice(0, 10)))].sort(),
    );
    expect(requests?.bytes).toBeGreaterThan(0);
    expect(plan.tables.find((x) => x.table === "turns")?.rows).toBe(1);
    const support = plan.projects.find((p) => p.project === "support");
    expect(support?.tables.find((x) => x.table === "requests")?.rows).toBe(1);
    expect(await count("requests")).toBe(OLD.length + STRADDLING.length + MIDDLE.length + RECENT.length);
  });

  it("apply removes rows past the horizons, keeps the rest, and writers are never held for more than a batch", async () => {
    let writes = 0;
    const result = await applyRetention(t.services.database, retentionHorizons(t.services.config), {
      batchRows: 1,
      // Between two batches, a write of ingest completes: apply holds no lock from one batch to the next.
      onBatch: async () => {
        const res = await t.call("POST", "/v1/ingest", { key: KEYS.ops, body: [{ id: randomUUID(), timestamp: new Date().toISOString(), modality: "llm", model_id: "openai/gpt-4.1-mini", project: "probe-writes", input_tokens: 1, output_tokens: 1, cost_usd: 0 }] });
        expect(((await res.json()) as { accepted: number }).accepted).toBe(1);
        writes++;
      },
    });
    expect(result.ran).toBe(true);
    expect(result.deleted.requests).toBe(OLD.length + 1);
    expect(result.projects.support?.requests).toBe(1);
    expect(writes).toBe(result.total_deleted);
    expect(await count("requests", sql`ts < ${rawCutoff.toISOString()}::timestamptz`)).toBe(0);
    expect(await count("requests", sql`project = 'support' AND ts < ${supportCutoff.toISOString()}::timestamptz`)).toBe(0);
    expect(await count("requests", sql`project = 'sales'`)).toBe(2); // the straddler's kept half, and the middle one
    expect(await count("requests", sql`project = 'probe-writes'`)).toBe(writes);
    expect(await count("turns")).toBe(1);
    // The session ended before support's horizon: gone. The straddler stays, with its totals as ingested.
    expect(await count("sessions", sql`id = 'sess-support-old'`)).toBe(0);
    const [s] = await queryRows<{ request_count: number }>(db(), sql`SELECT request_count FROM sessions WHERE id = ${STRADDLE}`);
    expect(s?.request_count).toBe(2);
  });

  it("costs, billing usage, the cost series, the fleet index and project spend answer the same totals", async () => {
    const after = await snapshot();
    for (const p of REPORTS) {
      // The probe writes of the previous test are today's traffic of their own project: leave them out.
      if (p.startsWith("/v1/costs") || p.startsWith("/api/costs")) continue;
      expect(after[p], p).toEqual(before[p]);
    }
    const costs = (x: Record<string, unknown>) => ({ ...x, total: undefined, by_project: { ...(x.by_project as object), "probe-writes": undefined } });
    const beforeCosts = before["/v1/costs?period=all"] as Record<string, unknown>;
    const afterCosts = after["/v1/costs?period=all"] as Record<string, unknown>;
    expect((afterCosts.by_project as Record<string, unknown>).support).toEqual((beforeCosts.by_project as Record<string, unknown>).support);
    expect(costs(afterCosts).by_project).toEqual(costs(beforeCosts).by_project);
    const usage = before[REPORTS[1] as string] as { tenants: { tenant: string | null }[] };
    expect(usage.tenants.map((x) => x.tenant).sort()).toEqual([null, "acme", "globex"].sort());
  });

  it("a session straddling the horizon keeps its ingested totals; its per-modality detail sums only the requests kept", async () => {
    const body = (await get(`/v1/sessions/${STRADDLE}`)) as { request_count: number; started_at: string; by_modality: Record<string, { request_count: number }> };
    expect(body.request_count).toBe(2);
    expect(body.started_at).toBe(daysAgo(91).toISOString());
    expect(body.by_modality.llm?.request_count).toBe(1);
  });

  it("re-rating a window that reaches before a horizon refuses, naming it", async () => {
    const err = await rerateWindow(db(), t.services.rateCard.snapshot(), { from: oldMonthFrom, to: oldMonthTo }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DomainError);
    expect((err as DomainError).code).toBe("bad_request");
    expect((err as DomainError).message).toContain(rawCutoff.toISOString());
    const support = await rerateWindow(db(), t.services.rateCard.snapshot(), { from: daysAgo(45), to: daysAgo(35) }).catch((e: unknown) => e);
    expect((support as DomainError).message).toContain("project support");
    const ok = await rerateWindow(db(), t.services.rateCard.snapshot(), { from: new Date(today - DAY), to: new Date(today + DAY) });
    expect(ok.rows).toBeGreaterThan(0);
  });

  it("a record re-sent after its day was removed: an operator key stores it again; a tenant key cannot date it back", async () => {
    const old = OLD[4] as RequestRow;
    const resend = { id: old.id, timestamp: (old.ts as Date).toISOString(), modality: "llm", model_id: "openai/gpt-4.1-mini", project: "support", input_tokens: 1, output_tokens: 1, cost_usd: 0.001 };
    const res = await t.call("POST", "/v1/ingest", { key: KEYS.ops, body: [resend] });
    expect(await res.json()).toMatchObject({ accepted: 1, duplicates: 0 });
    const tenant = await t.call("POST", "/v1/ingest", { key: KEYS.acmeIngest, body: [{ ...resend, id: (OLD[0] as RequestRow).id }] });
    const refused = (await tenant.json()) as { accepted: number; skipped_records: { reason: string }[] };
    expect(refused.accepted).toBe(0);
    expect(refused.skipped_records[0]?.reason).toContain("backdate_horizon_days");
    // ... and the next run removes the operator's again.
    const again = await applyRetention(t.services.database, retentionHorizons(t.services.config));
    expect(again.deleted.requests).toBe(1);
  });

  it("one replica at a time: a run finding the advisory lock held does nothing", async () => {
    if (t.services.database.kind !== "postgres") return; // PGlite is one connection, one process
    await t.services.database.withConnection(async (conn) => {
      await conn.execute(sql`SELECT pg_advisory_lock(${RETENTION_LOCK_KEY})`);
      try {
        const r = await applyRetention(t.services.database, retentionHorizons(t.services.config));
        expect(r.ran).toBe(false);
      } finally {
        await conn.execute(sql`SELECT pg_advisory_unlock(${RETENTION_LOCK_KEY})`);
      }
    });
  });

  it("metrics: rows and bytes per raw table, the oldest request, the last run", async () => {
    const res = await t.call("GET", "/v1/metrics", { key: KEYS.ops });
    const text = await res.text();
    expect(text).toMatch(/voxgate_raw_table_rows\{table="requests"\} \d+/);
    expect(text).toMatch(/voxgate_raw_table_bytes\{table="turns"\} [1-9]\d*/);
    expect(text).toMatch(/voxgate_retention_last_run_duration_seconds \d/);
    expect(text).toMatch(/voxgate_retention_oldest_request_timestamp_seconds \d/);
  });

  it("metrics: table sizes are walked at most once per max age, a stale scrape answered at once and refreshed behind it", async () => {
    let now = 0;
    const sizes = cachedTableSizes(db(), 60_000, () => now);
    const first = await sizes();
    const older = row({ ts: daysAgo(500), tenant_id: "acme" });
    await seedRequests(db(), [older]);
    try {
      expect(await sizes()).toBe(first); // within the max age: the same figures, no walk
      now = 60_000;
      expect(await sizes()).toBe(first); // past it: the previous figures, a refresh started
      await expect.poll(async () => (await sizes()).oldestRequest?.getTime()).toBe(older.ts.getTime());
    } finally {
      await db().execute(sql`DELETE FROM requests WHERE id = ${older.id}`);
    }
  });
});
