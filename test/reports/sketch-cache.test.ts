import { sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { latencyReport } from "../../src/reports/latency.js";
import { mergeParts, parseStoredSketch, SketchCache, sketchOfParts } from "../../src/reports/sketch-cache.js";
import { mergeStoredSketch } from "../../src/rollups/sketch-json.js";
import { addSample, EXACT_SAMPLE_LIMIT, emptySketch, type LatencySketch, sketchOf, summarize, summarizeSamples } from "../../src/stats/summary.js";
import { useTestApp } from "../support/app.js";
import { DAY, HOUR, insertRequests, KEYS, MIN, REPORTS_YAML, row } from "./fixtures.js";

/** A rollup row's stored sketch as jsonb hands it back. */
const stored = (samples: number[]) => JSON.parse(JSON.stringify(sketchOf(samples))) as Record<string, unknown>;

/** What the read did before the cache: the stored sketches merged one by one (samples dropped in SQL past the bound), then the raw values. */
function mergedOneByOne(parts: Record<string, unknown>[], raw: number[]): LatencySketch {
  const total = parts.reduce((n, p) => n + (p.count as number), 0) + raw.length;
  const into = emptySketch();
  for (const p of parts) {
    const { samples, ...rest } = p;
    mergeStoredSketch(into, total <= EXACT_SAMPLE_LIMIT ? p : rest);
  }
  for (const v of raw) addSample(into, v);
  return into;
}

let seed = 7;
const random = () => {
  seed = (seed * 16807) % 2147483647;
  return seed / 2147483647;
};
const latencies = (n: number) => Array.from({ length: n }, () => (random() < 0.02 ? 0 : Math.round(random() * 3000 * 100) / 100));

describe("sketchOfParts", () => {
  it("answers as the stored sketches merged one by one: exact within the bound, buckets past it", () => {
    for (const [sizes, raw] of [
      [[3, 10, 0, 40], 5],
      [[300, 400, 200], 50],
      [[900, 50], 51],
      [[2000, 5, 700], 300],
      [[], 12],
    ] as const) {
      const parts = sizes.map((n) => stored(latencies(n)));
      const rawValues = latencies(raw);
      const ours = sketchOfParts(
        parts.map((p) => parseStoredSketch(p)),
        rawValues,
      );
      const before = mergedOneByOne(parts, rawValues);
      expect(summarize(ours)).toEqual(summarize(before));
      // Merged first (what a report reuses while its rows are unchanged), then the raw values: the same.
      const premerged = sketchOfParts([mergeParts(parts.map((p) => parseStoredSketch(p)))], rawValues);
      expect(summarize(premerged)).toEqual(summarize(before));
      expect({ ...premerged, samples: null, buckets: null }).toEqual({ ...before, samples: null, buckets: null });
      expect(ours.samples === null).toBe(before.samples === null);
      expect({ ...ours, samples: null, buckets: null }).toEqual({ ...before, samples: null, buckets: null });
    }
  });

  it("a stored sketch without its samples (written before sketches kept them) makes the merge inexact, as before", () => {
    const a = stored([100, 200, 300]);
    const { samples, ...b } = stored([400, 500]);
    const ours = sketchOfParts([parseStoredSketch(a), parseStoredSketch(b)], [600]);
    expect(ours.samples).toBeNull();
    expect(summarize(ours)).toEqual(summarize(mergedOneByOne([a, b], [600])));
  });

  it("a malformed stored sketch counts as empty", () => {
    for (const bad of [null, "not json at all", 42, { count: "x" }, { count: -1 }]) {
      expect(() => parseStoredSketch(bad)).not.toThrow();
      const s = sketchOfParts([parseStoredSketch(bad)], [5]);
      expect(s.count).toBe(1);
    }
  });
});

describe("SketchCache", () => {
  const pair = (n: number) => ({ ttfb: parseStoredSketch(stored(latencies(n))), latency: parseStoredSketch(stored([])) });

  it("drops the least recently used versions past its weight, and knows only what it still holds", () => {
    // Each pair weighs ~300 (100 samples and their buckets): two fit, three do not.
    const cache = new SketchCache(700);
    cache.set("a", pair(100));
    cache.set("b", pair(100));
    cache.get("a"); // a is now the most recently used
    cache.set("c", pair(100));
    expect(cache.has("a")).toBe(true);
    expect(cache.has("b")).toBe(false);
    expect(cache.has("c")).toBe(true);
    cache.remember("shape", ["a", "b", "c"]);
    expect(cache.known("shape")).toEqual(["a", "c"]);
    expect(cache.known("other shape")).toEqual([]);
  });
});

describe("latency reports from cached rollup sketches", () => {
  const t = useTestApp({ yaml: REPORTS_YAML });
  const GPT = "openai/gpt-4.1-mini";
  const acme = { tenant_id: "acme", project: "support" };

  const latency = async (path: string) => {
    const res = await t.call("GET", path, { key: KEYS.acme });
    expect(res.status).toBe(200);
    return (await res.json()) as { models: Record<string, Record<string, number>> };
  };

  it("a rollup row written after it was cached is read again: the answer counts every sample", async () => {
    const db = t.services.database.db;
    const now = Date.now();
    // Two closed hours and two closed days of the week, so the week reads hour and day rollup rows.
    const first = [
      row({ ...acme, now, agoMs: 2 * DAY, ttfb_ms: 100, total_latency_ms: 1000 }),
      row({ ...acme, now, agoMs: 3 * DAY, ttfb_ms: 110, total_latency_ms: 1100 }),
      row({ ...acme, now, agoMs: 6 * DAY + 12 * HOUR, ttfb_ms: 120, total_latency_ms: 1200 }),
    ];
    await insertRequests(db, first);
    const before = await latency("/v1/latency?period=week");
    expect(before.models[GPT]?.ttfb_samples).toBe(3);
    expect(await latency("/v1/latency?period=week")).toEqual(before); // answered from the cache

    // New rows in the same day and hour buckets: their rollup rows get new versions.
    const more = [
      row({ ...acme, now, agoMs: 2 * DAY + MIN, ttfb_ms: 900, total_latency_ms: 9000 }),
      row({ ...acme, now, agoMs: 6 * DAY + 12 * HOUR + MIN, ttfb_ms: 950, total_latency_ms: 9500 }),
    ];
    await insertRequests(db, more);
    const after = await latency("/v1/latency?period=week");
    const ttfb = summarizeSamples([100, 110, 120, 900, 950]);
    expect(after.models[GPT]).toMatchObject({ ttfb_samples: 5, requests: 5, p95_ttfb_ms: ttfb?.p95, p50_ttfb_ms: ttfb?.p50 });
    // The same as a read with an empty cache.
    const fresh = await latencyReport(db, { tenantId: "acme", project: null, period: "week", cache: new SketchCache() });
    expect(after.models).toEqual(fresh.models);
  });

  it("a rewritten rollup table (VACUUM FULL) is read again: rows of one transaction moved into each other's places are not taken for each other", async () => {
    const db = t.services.database.db;
    const now = Date.now();
    // One batch (one transaction) writes several rollup rows of one hour: distinct models.
    const hourAgo = 3 * HOUR + 10 * MIN;
    const models = ["openai/gpt-4o", "openai/gpt-4o-mini", "openai/o3", "openai/o4-mini"];
    await insertRequests(
      db,
      models.flatMap((model_id, m) => [1, 2, 3].map((k) => row({ ...acme, now, agoMs: hourAgo, model_id, ttfb_ms: 100 * (m + 1) + k, total_latency_ms: 1000 * (m + 1) + k }))),
    );
    const first = await latency("/v1/latency?period=week");
    // Delete the first model's rows from the rollup tables and rewrite them: the others move up.
    await db.execute(sql.raw(`DELETE FROM request_model_rollups WHERE model_id = '${models[0]}'`));
    await db.execute(sql.raw(`DELETE FROM request_model_rollups_daily WHERE model_id = '${models[0]}'`));
    await db.execute(sql.raw("VACUUM FULL request_model_rollups"));
    await db.execute(sql.raw("VACUUM FULL request_model_rollups_daily"));
    const after = await latency("/v1/latency?period=week");
    const fresh = await latencyReport(db, { tenantId: "acme", project: null, period: "week", cache: new SketchCache() });
    expect(after.models).toEqual(fresh.models);
    for (const m of models.slice(1)) expect(after.models[m]).toEqual(first.models[m]);
  });

  it("the dashboard's latency series reads a changed hour again, and a point of few samples is exact", async () => {
    const db = t.services.database.db;
    const now = Date.now();
    const hour = Math.floor((now - 5 * HOUR) / HOUR) * HOUR;
    const at = (min: number) => ({ ...acme, agoMs: now - (hour + min * MIN), now });
    await insertRequests(db, [row({ ...at(1), ttfb_ms: 10, total_latency_ms: 100 }), row({ ...at(2), ttfb_ms: 20, total_latency_ms: 200 })]);
    const point = async () => {
      const res = await t.call("GET", "/api/latency/series?period=today", { key: KEYS.acme });
      expect(res.status).toBe(200);
      const body = (await res.json()) as { points: { t: string; requests: number; p50_ttfb_ms: number | null; p95_ttfb_ms: number | null }[] };
      return body.points.find((p) => p.t === new Date(hour).toISOString());
    };
    expect(await point()).toMatchObject({ requests: 2, p95_ttfb_ms: 20 });
    await insertRequests(db, [row({ ...at(3), ttfb_ms: 33.33, total_latency_ms: 300 })]);
    expect(await point()).toMatchObject({ requests: 3, p50_ttfb_ms: 20, p95_ttfb_ms: 33.33 });
  });

  it("reports of many shapes at once over a cache too small to hold them answer as an empty cache does", async () => {
    const db = t.services.database.db;
    const now = Date.now();
    const rows = [];
    for (let d = 0; d < 7; d++) {
      for (const project of ["support", "sales", "ops"]) {
        for (let i = 0; i < 30; i++) rows.push(row({ tenant_id: "acme", project, now, agoMs: d * DAY + i * 7 * MIN, ttfb_ms: 50 + d * 10 + i, total_latency_ms: 500 + i }));
      }
    }
    await insertRequests(db, rows);
    const tiny = new SketchCache(2_000);
    const shapes = (["today", "week", "month"] as const).flatMap((period) => [null, "support", "sales", "ops"].map((project) => ({ period, project })));
    for (let round = 0; round < 3; round++) {
      const answers = await Promise.all(shapes.map((s) => latencyReport(db, { tenantId: "acme", ...s, cache: tiny })));
      const expected = await Promise.all(shapes.map((s) => latencyReport(db, { tenantId: "acme", ...s, cache: new SketchCache() })));
      expect(answers).toEqual(expected);
    }
  });
});
