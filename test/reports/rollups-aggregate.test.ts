import { describe, expect, it } from "vitest";
import { aggregateRows, ALL_PROJECTS, DAY_MS, HOUR_MS, ROLLUP_GRAINS, type RequestRow, rollupKey } from "../../src/rollups/apply.js";
import { parseMoney as toScaled } from "../../src/money.js";
import { type LatencySketch, sketchOf } from "../../src/stats/summary.js";

/** A sketch with its sum left out (float order) and its raw samples sorted (a multiset). */
const comparable = (s: LatencySketch) => ({ ...s, sum: 0, samples: s.samples ? [...s.samples].sort((x, y) => x - y) : s.samples });

/** Rows over three days, two tenants, three projects, two models, probe and error rows, missing fields. */
function rows(): RequestRow[] {
  const start = Date.UTC(2026, 10, 1, 22, 0, 0);
  return Array.from({ length: 400 }, (_, i) => ({
    id: `r${i}`,
    ts: new Date(start + i * 7 * 60_000 + (i % 13) * 1000),
    tenantId: i % 5 === 0 ? null : "acme",
    project: i % 7 === 0 ? undefined : ["a", "b", "default"][i % 3],
    provider: i % 2 ? "openai" : "deepgram",
    modelId: i % 2 ? "openai/gpt-4.1-mini" : "deepgram/nova-3",
    modality: i % 2 ? "llm" : "stt",
    isProbe: i % 11 === 0,
    status: i % 9 === 0 ? "error" : "success",
    costUsd: i % 4 === 0 ? null : `0.00${i}12345678`,
    ratedPriceUsd: i % 6 === 0 ? undefined : (i * 0.000123).toFixed(10),
    inputUnits: i % 3 === 0 ? null : i * 3,
    outputUnits: i % 2,
    ttfbMs: i % 8 === 0 ? null : (i % 50) * 1.5,
    totalLatencyMs: i % 10 === 0 ? 0 : 100 + i,
  }));
}

/** The rollups of one grain computed straight from the rows, one key at a time (the reference). */
function reference(input: RequestRow[], grainMs: number, allProjects: boolean) {
  const groups = new Map<string, RequestRow[]>();
  for (const r of input) {
    const ts = new Date(r.ts).getTime();
    const key = [Math.floor(ts / grainMs) * grainMs, r.tenantId ?? null, allProjects ? ALL_PROJECTS : (r.project ?? "default"), r.provider, r.modelId, r.modality, r.isProbe ?? false].join("|");
    groups.set(key, [...(groups.get(key) ?? []), r]);
  }
  return new Map(
    [...groups].map(([key, g]) => [
      key,
      {
        requests: g.length,
        errors: g.filter((r) => r.status === "error").length,
        cost: g.reduce((s, r) => s + toScaled(r.costUsd), 0n),
        rated: g.reduce((s, r) => s + toScaled(r.ratedPriceUsd), 0n),
        inputUnits: g.reduce((s, r) => s + (r.inputUnits ?? 0), 0),
        ttfb: sketchOf(g.flatMap((r) => (r.ttfbMs === null || r.ttfbMs === undefined ? [] : [r.ttfbMs]))),
        latency: sketchOf(g.flatMap((r) => (r.totalLatencyMs === null || r.totalLatencyMs === undefined ? [] : [r.totalLatencyMs]))),
      },
    ]),
  );
}

describe("aggregateRows: one hourly pass folded into the coarser grains", () => {
  for (const grain of ROLLUP_GRAINS) {
    it(`${grain.table} equals aggregating the rows directly`, () => {
      const input = rows();
      const got = aggregateRows(input, grain.ms, grain.allProjects);
      const want = reference(input, grain.ms, grain.allProjects);
      expect(got.length).toBe(want.size);
      for (const a of got) {
        const key = [a.bucket.getTime(), a.tenantId, a.project, a.provider, a.modelId, a.modality, a.isProbe].join("|");
        const w = want.get(key);
        expect(w, key).toBeDefined();
        expect({ requests: a.requests, errors: a.errors, cost: a.cost, rated: a.rated }).toEqual({
          requests: w?.requests,
          errors: w?.errors,
          cost: w?.cost,
          rated: w?.rated,
        });
        expect(a.inputUnits).toBeCloseTo(w?.inputUnits ?? Number.NaN, 6);
        for (const [s, ws] of [
          [a.ttfb, w?.ttfb],
          [a.latency, w?.latency],
        ] as const) {
          // Raw samples are a multiset: folding concatenates them in key order, so compare them sorted.
          expect(comparable(s)).toEqual(ws && comparable(ws));
          expect(s.sum).toBeCloseTo(ws?.sum ?? Number.NaN, 6);
        }
        expect(a.bucket.getTime() % (grain.ms === HOUR_MS ? HOUR_MS : DAY_MS)).toBe(0);
      }
    });
  }

  it("keys come out sorted (the lock order) and distinct", () => {
    for (const grain of ROLLUP_GRAINS) {
      const got = aggregateRows(rows(), grain.ms, grain.allProjects);
      const keys = got.map((a) => rollupKey(a, a.bucket.getTime()));
      expect(keys).toEqual([...new Set(keys)].sort());
    }
  });
});
