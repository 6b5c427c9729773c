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
    tenant_id: i % 5 === 0 ? null : "acme",
    project: i % 7 === 0 ? undefined : ["a", "b", "default"][i % 3],
    provider: i % 2 ? "openai" : "deepgram",
    model_id: i % 2 ? "openai/gpt-4.1-mini" : "deepgram/nova-3",
    modality: i % 2 ? "llm" : "stt",
    is_probe: i % 11 === 0,
    status: i % 9 === 0 ? "error" : "success",
    cost_usd: i % 4 === 0 ? null : `0.00${i}12345678`,
    rated_price_usd: i % 6 === 0 ? undefined : (i * 0.000123).toFixed(10),
    input_units: i % 3 === 0 ? null : i * 3,
    output_units: i % 2,
    ttfb_ms: i % 8 === 0 ? null : (i % 50) * 1.5,
    total_latency_ms: i % 10 === 0 ? 0 : 100 + i,
  }));
}

/** The rollups of one grain computed straight from the rows, one key at a time (the reference). */
function reference(input: RequestRow[], grainMs: number, allProjects: boolean) {
  const groups = new Map<string, RequestRow[]>();
  for (const r of input) {
    const ts = new Date(r.ts).getTime();
    const key = [Math.floor(ts / grainMs) * grainMs, r.tenant_id ?? null, allProjects ? ALL_PROJECTS : (r.project ?? "default"), r.provider, r.model_id, r.modality, r.is_probe ?? false].join("|");
    groups.set(key, [...(groups.get(key) ?? []), r]);
  }
  return new Map(
    [...groups].map(([key, g]) => [
      key,
      {
        requests: g.length,
        errors: g.filter((r) => r.status === "error").length,
        cost: g.reduce((s, r) => s + toScaled(r.cost_usd), 0n),
        rated: g.reduce((s, r) => s + toScaled(r.rated_price_usd), 0n),
        input_units: g.reduce((s, r) => s + (r.input_units ?? 0), 0),
        ttfb: sketchOf(g.flatMap((r) => (r.ttfb_ms === null || r.ttfb_ms === undefined ? [] : [r.ttfb_ms]))),
        latency: sketchOf(g.flatMap((r) => (r.total_latency_ms === null || r.total_latency_ms === undefined ? [] : [r.total_latency_ms]))),
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
        const key = [a.bucket.getTime(), a.key.tenant_id, a.key.project, a.key.provider, a.key.model_id, a.key.modality, a.key.is_probe].join("|");
        const w = want.get(key);
        expect(w, key).toBeDefined();
        expect({ requests: a.requests, errors: a.errors, cost: a.cost, rated: a.rated }).toEqual({
          requests: w?.requests,
          errors: w?.errors,
          cost: w?.cost,
          rated: w?.rated,
        });
        expect(a.inputUnits).toBeCloseTo(w?.input_units ?? Number.NaN, 6);
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
      const keys = got.map((a) => rollupKey(a.key, a.bucket.getTime()));
      expect(keys).toEqual([...new Set(keys)].sort());
    }
  });
});
