import { describe, expect, it } from "vitest";
import { emptySketch, mergeSketch, quantile, sketchOf, summarize, summarizeSamples } from "../../src/stats/summary.js";

describe("latency summary routine", () => {
  it("is null, not zeros, without samples", () => {
    expect(summarize(emptySketch())).toBeNull();
    expect(summarizeSamples([])).toBeNull();
  });

  it("answers quantiles within 1% of the true nearest-rank value", () => {
    const samples = Array.from({ length: 10_000 }, (_, i) => 1 + i * 0.37);
    const sorted = [...samples].sort((a, b) => a - b);
    const s = sketchOf(samples);
    for (const q of [0.5, 0.9, 0.95, 0.99]) {
      const truth = sorted[Math.ceil(q * sorted.length) - 1] ?? 0;
      expect(Math.abs(quantile(s, q) - truth) / truth).toBeLessThanOrEqual(0.0101);
    }
  });

  it("merging two sketches equals sketching the union", () => {
    const a = [5, 10, 200, 730, 1200];
    const b = [0, 3, 950, 4000];
    expect(summarize(mergeSketch(sketchOf(a), sketchOf(b)))).toEqual(summarize(sketchOf([...a, ...b])));
  });

  it("keeps exact count, avg, min and max", () => {
    expect(summarizeSamples([100, 200, 600])).toMatchObject({ count: 3, avg: 300, min: 100, max: 600 });
  });
});
