import { randomUUID } from "node:crypto";
import { sql } from "drizzle-orm";
import { beforeAll, describe, expect, it } from "vitest";
import { costReport } from "../../src/reports/costs.js";
import { latencySketches } from "../../src/reports/latency.js";
import { queryRows } from "../../src/reports/sources.js";
import { type Period, reportSegments, windowSegments } from "../../src/reports/window.js";
import type { RequestRow } from "../../src/rollups/apply.js";
import { rebuildRollups } from "../../src/rollups/rebuild.js";
import { sketchFromJson } from "../../src/rollups/sketch-json.js";
import { type LatencySketch, sketchOf, summarize, summarizeSamples } from "../../src/stats/summary.js";
import { createTestApp, useTestApp } from "../support/app.js";
import { DAY, HOUR, insertRequests } from "./fixtures.js";

/** A sketch with its sum left out (float order) and its raw samples sorted (a multiset). */
const comparable = (s: LatencySketch) => ({ ...s, sum: 0, samples: s.samples ? [...s.samples].sort((x, y) => x - y) : s.samples });

// A deterministic generator, so a failure reproduces.
function lcg(seed: number) {
  let s = seed;
  return () => {
    s = (s * 1103515245 + 12345) % 2147483648;
    return s / 2147483648;
  };
}

const MODELS = [
  ["openai/gpt-4.1-mini", "llm"],
  ["deepgram/nova-3", "stt"],
  ["elevenlabs/eleven_flash_v2_5", "tts"],
] as const;
const TENANTS = [null, "acme", "globex"];
const PROJECTS = ["default", "support", "sales"];

describe("rollup windows equal raw aggregates", () => {
  const base = Math.floor(Date.now() / HOUR) * HOUR + 17 * 60_000 + 123;
  const t = useTestApp();
  beforeAll(async () => {
    const rnd = lcg(42);
    const rows: RequestRow[] = [];
    for (let i = 0; i < 900; i++) {
      const [modelId, modality] = MODELS[Math.floor(rnd() * MODELS.length)] ?? MODELS[0];
      rows.push({
        id: randomUUID(),
        ts: new Date(base - Math.floor(rnd() * 50 * DAY)),
        tenant_id: TENANTS[Math.floor(rnd() * TENANTS.length)] ?? null,
        project: PROJECTS[Math.floor(rnd() * PROJECTS.length)] ?? "default",
        model_id: modelId,
        modality,
        provider: modelId.split("/")[0] ?? "x",
        status: rnd() < 0.1 ? "error" : "success",
        cost_usd: rnd() < 0.1 ? null : (rnd() * 3).toFixed(10),
        rated_price_usd: (rnd() * 4).toFixed(10),
        ttfb_ms: rnd() < 0.1 ? null : 50 + rnd() * 900,
        total_latency_ms: 100 + rnd() * 3000,
        is_probe: rnd() < 0.15,
      });
    }
    // Uneven batches, so buckets are created by one batch and merged by the next.
    for (let i = 0; i < rows.length; i += 97) await insertRequests(t.services.database.db, rows.slice(i, i + 97));
  });

  const nows = () => [
    new Date(base),
    new Date(base - 3.5 * HOUR),
    new Date(Math.floor(base / HOUR) * HOUR), // exactly on an hour
    new Date(Math.floor(base / DAY) * DAY - 5 * DAY), // exactly on a day
    new Date(base - 7 * DAY + 11 * 60_000),
  ];

  it("window segments tile the window without gaps or overlaps", () => {
    for (const now of nows()) {
      for (const period of ["today", "week", "month"] as const) {
        const segs = windowSegments(period, now);
        expect(segs[0]?.from?.getTime()).toBe(now.getTime() - { today: 1, week: 7, month: 30 }[period] * DAY);
        for (let i = 1; i < segs.length; i++) expect(segs[i]?.from?.getTime()).toBe(segs[i - 1]?.to?.getTime());
        expect(segs.at(-1)?.to?.getTime()).toBe(now.getTime());
        // The reports' segments tile it too, from today's midnight on as one `today` segment.
        const read = reportSegments(period, now);
        expect(read[0]?.from?.getTime()).toBe(segs[0]?.from?.getTime());
        for (let i = 1; i < read.length; i++) expect(read[i]?.from?.getTime()).toBe(read[i - 1]?.to?.getTime());
        expect(read.at(-1)).toEqual({ source: "today", from: new Date(Math.floor(now.getTime() / DAY) * DAY), to: now, toInclusive: true });
        expect(read.slice(0, -1).every((s) => s.source !== "today" && s.to.getTime() <= Math.floor(now.getTime() / DAY) * DAY)).toBe(true);
      }
    }
  });

  it("costs: every period, tenant and project, exact", async () => {
    const db = t.services.database.db;
    for (const now of nows()) {
      for (const period of ["today", "week", "month", "all"] as Period[]) {
        for (const tenantId of [null, "acme"]) {
          for (const project of [null, "support"]) {
            const report = await costReport(db, { period, tenantId, project, now });
            const start = period === "all" ? null : new Date(now.getTime() - { today: 1, week: 7, month: 30 }[period] * DAY);
            const raw = await queryRows<{ provider: string; cost: string; n: string }>(
              db,
              sql`SELECT provider, sum(coalesce(cost_usd, 0))::text AS cost, count(*) AS n FROM requests WHERE true
                ${start ? sql`AND ts >= ${start.toISOString()}::timestamptz` : sql``} AND ts <= ${now.toISOString()}::timestamptz
                ${tenantId ? sql`AND tenant_id = ${tenantId}` : sql``} ${project ? sql`AND project = ${project}` : sql``}
                GROUP BY provider`,
            );
            const expected = Object.fromEntries(raw.map((r) => [r.provider, { cost: Math.round(Number(r.cost) * 1e10) / 1e10, requests: Number(r.n) }]));
            expect(report.by_provider, `${period} ${now.toISOString()} ${tenantId} ${project}`).toEqual(expected);
          }
        }
      }
    }
  });

  it("latency: the same sketch (count, quantiles) as summarizing raw non-probe samples", async () => {
    const db = t.services.database.db;
    for (const now of nows()) {
      for (const [period, project] of [["today", null], ["week", null], ["month", null], ["week", "support"], ["today", "sales"]] as const) {
        const sketches = await latencySketches(db, { period, tenantId: "globex", project, now });
        const start = new Date(now.getTime() - { today: 1, week: 7, month: 30 }[period] * DAY);
        const raw = await queryRows<{ model_id: string; ttfb_ms: number | null; total_latency_ms: number | null }>(
          db,
          sql`SELECT model_id, ttfb_ms, total_latency_ms FROM requests WHERE ts >= ${start.toISOString()}::timestamptz
            AND ts <= ${now.toISOString()}::timestamptz AND tenant_id = 'globex' AND NOT is_probe ${project ? sql`AND project = ${project}` : sql``}`,
        );
        for (const [modelId] of MODELS) {
          const mine = raw.filter((r) => r.model_id === modelId);
          const got = sketches.get(modelId);
          expect(got?.requests ?? 0).toBe(mine.length);
          const expTtfb = summarizeSamples(mine.flatMap((r) => (r.ttfb_ms === null ? [] : [r.ttfb_ms])));
          const expTotal = summarizeSamples(mine.flatMap((r) => (r.total_latency_ms === null ? [] : [r.total_latency_ms])));
          const gotTtfb = got ? summarize(got.ttfb) : null;
          const gotTotal = got ? summarize(got.latency) : null;
          expect(gotTtfb && { ...gotTtfb, avg: 0 }).toEqual(expTtfb && { ...expTtfb, avg: 0 });
          expect(gotTotal && { ...gotTotal, avg: 0 }).toEqual(expTotal && { ...expTotal, avg: 0 });
          if (gotTotal && expTotal) expect(gotTotal.avg).toBeCloseTo(expTotal.avg, 1);
        }
      }
    }
  });

  it("concurrent batches on the same keys merge without deadlock or loss", async () => {
    const db = t.services.database.db;
    const ts = new Date(base - 40 * DAY);
    const batch = (n: number): RequestRow[] =>
      Array.from({ length: n }, (_, i) => ({
        id: randomUUID(),
        ts,
        tenant_id: "concurrent",
        project: PROJECTS[i % 3] ?? "default",
        model_id: MODELS[i % 3]?.[0] ?? "openai/gpt-4.1-mini",
        modality: MODELS[i % 3]?.[1] ?? "llm",
        provider: (MODELS[i % 3]?.[0] ?? "openai/x").split("/")[0] ?? "openai",
        cost_usd: "0.0000000001",
        total_latency_ms: 100 + i,
      }));
    await Promise.all(Array.from({ length: 6 }, (_, i) => insertRequests(db, i % 2 ? batch(30).reverse() : batch(30))));
    const [r] = await queryRows<{ n: string; cost: string; lat: string }>(
      db,
      sql`SELECT sum(requests)::text AS n, sum(cost_usd)::text AS cost, sum(latency_count)::text AS lat FROM request_rollups WHERE tenant_id = 'concurrent'`,
    );
    expect(r).toEqual({ n: "180", cost: "0.0000000180", lat: "180" });
    const [d] = await queryRows<{ n: string }>(db, sql`SELECT sum(requests)::text AS n FROM request_rollups_daily WHERE tenant_id = 'concurrent'`);
    expect(d?.n).toBe("180");
  });

  it("rebuildRollups (bulk SQL) produces what applyRequestRollups maintained", async () => {
    const db = t.services.database.db;
    const snapshot = async (table: string) =>
      (
        await queryRows<Record<string, unknown>>(
          db,
          sql`SELECT bucket, tenant_id, project, provider, model_id, modality, is_probe, requests, errors, cost_usd::text AS cost,
            rated_price_usd::text AS rated, ttfb_count, latency_count, ttfb_hist, latency_hist
          FROM ${sql.raw(table)} WHERE tenant_id IS DISTINCT FROM 'concurrent'
          ORDER BY bucket, tenant_id NULLS FIRST, project, provider, model_id, modality, is_probe`,
        )
      ).map(({ ttfb_hist, latency_hist, ...rest }) => ({
        ...rest,
        ttfb: summarize(sketchFromJson(ttfb_hist)),
        latency: summarize(sketchFromJson(latency_hist)),
      }));
    const from = new Date(Math.floor((base - 51 * DAY) / DAY) * DAY);
    const to = new Date(Math.ceil(base / DAY) * DAY + DAY);
    const tables = ["request_rollups", "request_rollups_daily", "request_model_rollups", "request_model_rollups_daily"];
    const before = await Promise.all(tables.map(snapshot));
    await db.execute(sql`DELETE FROM requests WHERE tenant_id = 'concurrent'`);
    await rebuildRollups(db, from, to);
    const after = await Promise.all(tables.map(snapshot));
    for (const [i, rows] of after.entries()) expect(rows.length, tables[i]).toBe(before[i]?.length);
    expect(after[2]?.length).toBeGreaterThan(0);
    for (const [i, rows] of after.entries()) {
      rows.forEach((r, j) => {
        const b = before[i]?.[j];
        expect({ ...r, ttfb: r.ttfb && { ...r.ttfb, avg: 0 }, latency: r.latency && { ...r.latency, avg: 0 } }).toEqual({
          ...b,
          ttfb: b?.ttfb && { ...b.ttfb, avg: 0 },
          latency: b?.latency && { ...b.latency, avg: 0 },
        });
      });
    }
  });
});

describe("latency past the exact bound", () => {
  const t = useTestApp();
  const now = Date.now();
  const rows: RequestRow[] = [];
  beforeAll(async () => {
    const rnd = lcg(7);
    // 4,000 rows of one tenant's model, 3,000 over the last 2.5 days, the rest over 8 days, up to 3 hours
    // past now: every window's sketches hold more than EXACT_SAMPLE_LIMIT samples (merged from buckets),
    // whatever the time of day. The window ending just after today's UTC midnight reaches back to up to
    // 48 hours before now: over 36 hours it held ~870 rows when the suite ran at 23:20 UTC.
    for (let i = 0; i < 4000; i++) {
      rows.push({
        id: randomUUID(),
        ts: new Date(now + 3 * HOUR - Math.floor(rnd() * (i % 4 === 0 ? 8 * DAY : 2.5 * DAY))),
        tenant_id: "bound",
        project: PROJECTS[i % 3] ?? "default",
        model_id: "openai/gpt-4.1-mini",
        modality: "llm",
        provider: "openai",
        status: "success",
        ttfb_ms: 300 * Math.exp(rnd() * 2 - 1),
        total_latency_ms: rnd() < 0.01 ? 0 : 900 * Math.exp(rnd() * 3 - 1.5),
        is_probe: false,
      });
    }
    for (let i = 0; i < rows.length; i += 500) await insertRequests(t.services.database.db, rows.slice(i, i + 500));
  });

  it("answers as the sketch of every raw sample, with and without rows later today", async () => {
    for (const at of [now, now - 2 * HOUR, Math.floor(now / DAY) * DAY + 1]) {
      for (const period of ["today", "week"] as const) {
        const from = at - { today: 1, week: 7 }[period] * DAY;
        const mine = rows.filter((r) => (r.ts as Date).getTime() >= from && (r.ts as Date).getTime() <= at);
        expect(mine.length).toBeGreaterThan(1000);
        const got = (await latencySketches(t.services.database.db, { period, tenantId: "bound", project: null, now: new Date(at) })).get("openai/gpt-4.1-mini");
        expect(got?.requests).toBe(mine.length);
        for (const [which, col] of [["ttfb", "ttfb_ms"], ["latency", "total_latency_ms"]] as const) {
          const want = summarize(sketchOf(mine.map((r) => r[col] as number)));
          const sum = got ? summarize(got[which]) : null;
          expect(sum && { ...sum, avg: 0 }, `${period} ${new Date(at).toISOString()} ${which}`).toEqual(want && { ...want, avg: 0 });
          if (sum && want) expect(sum.avg).toBeCloseTo(want.avg, 6);
        }
      }
    }
  });
});

describe("large batches", () => {
  it("a batch with thousands of rollup keys is folded in one statement (JSON parameters, no bind-parameter limit)", async () => {
    const t = await createTestApp();
    try {
      const ts = new Date(Date.now() - 3 * DAY);
      const rows: RequestRow[] = Array.from({ length: 2500 }, (_, i) => ({
        id: randomUUID(),
        ts,
        project: `p${i}`,
        model_id: "openai/gpt-4.1-mini",
        modality: "llm",
        provider: "openai",
        cost_usd: "0.001",
        ttfb_ms: i,
      }));
      await insertRequests(t.services.database.db, rows);
      const [r] = await queryRows<{ keys: string; n: string; cost: string }>(
        t.services.database.db,
        sql`SELECT count(*)::text AS keys, sum(requests)::text AS n, sum(cost_usd)::text AS cost FROM request_rollups`,
      );
      expect(r).toEqual({ keys: "2500", n: "2500", cost: "2.5000000000" });
    } finally {
      await t.close();
    }
  });
});

describe("sketch merges over batches", () => {
  it("stored sketches of keys hit by several batches equal sketchOf(all their samples), in every table", async () => {
    const t = await createTestApp();
    try {
      const db = t.services.database.db;
      const ts = new Date(Math.floor((Date.now() - 2 * DAY) / HOUR) * HOUR + 60_000);
      const rnd = lcg(7);
      const all: RequestRow[] = [];
      const batch = (n: number, withTtfb: boolean): RequestRow[] =>
        Array.from({ length: n }, (_, i) => {
          const [modelId, modality] = MODELS[i % 2] ?? MODELS[0];
          const r: RequestRow = {
            id: randomUUID(),
            ts: new Date(ts.getTime() + i * 1000),
            tenant_id: i % 3 === 0 ? null : "acme",
            project: PROJECTS[i % 3] ?? "default",
            model_id: modelId,
            modality,
            provider: modelId.split("/")[0] ?? "x",
            ttfb_ms: withTtfb ? (i % 7 === 0 ? 0 : 20 + rnd() * 900) : null,
            total_latency_ms: 50 + rnd() * 8000,
          };
          all.push(r);
          return r;
        });
      // The first batch creates the keys (no ttfb at all), the next ones merge into stored sketches.
      for (const [n, withTtfb] of [[40, false], [55, true], [31, true]] as const) await insertRequests(db, batch(n, withTtfb));
      for (const table of ["request_rollups", "request_rollups_daily", "request_model_rollups", "request_model_rollups_daily"]) {
        const stored = await queryRows<{ tenant_id: string | null; project: string; model_id: string; ttfb_hist: unknown; latency_hist: unknown }>(
          db,
          sql`SELECT tenant_id, project, model_id, ttfb_hist, latency_hist FROM ${sql.raw(table)}`,
        );
        expect(stored.length, table).toBeGreaterThan(0);
        for (const s of stored) {
          const mine = all.filter((r) => (r.tenant_id ?? null) === s.tenant_id && (s.project === "*" || r.project === s.project) && r.model_id === s.model_id);
          for (const [hist, samples] of [
            [s.ttfb_hist, mine.flatMap((r) => (r.ttfb_ms === null || r.ttfb_ms === undefined ? [] : [r.ttfb_ms]))],
            [s.latency_hist, mine.flatMap((r) => (r.total_latency_ms === null || r.total_latency_ms === undefined ? [] : [r.total_latency_ms]))],
          ] as const) {
            const expected = sketchOf(samples);
            const got = sketchFromJson(hist);
            // Raw samples are a multiset: merges concatenate them in batch order, so compare them sorted.
            expect(comparable(got), `${table} ${s.tenant_id} ${s.project} ${s.model_id}`).toEqual(comparable(expected));
            expect(got.sum).toBeCloseTo(expected.sum, 6);
          }
        }
      }
    } finally {
      await t.close();
    }
  });
});
