import { describe, expect, it } from "vitest";
import { decodeCachedSketch, mergeStoredSketch, packedSketch, sketchFromJson } from "../../src/rollups/sketch-json.js";
import { addSample, ascending, atReportedPrecision, EXACT_SAMPLE_LIMIT, emptySketch, isExact, mergeSketch, quantile, sketchOf, summarize, summarizeSamples } from "../../src/stats/summary.js";

/** The nearest-rank q-quantile: the ⌈q × n⌉-th smallest sample. */
const nearestRank = (samples: number[], q: number) => [...samples].sort((a, b) => a - b)[Math.max(1, Math.ceil(q * samples.length)) - 1];

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

  it("answers real samples by nearest rank while small: {700, 900, 1100} has p50 900", () => {
    expect(summarizeSamples([700, 900, 1100])).toMatchObject({ p50: 900, p90: 1100, p95: 1100, p99: 1100 });
    const samples = Array.from({ length: EXACT_SAMPLE_LIMIT }, (_, i) => 100 + ((i * 7919) % 1013) * 1.37);
    const s = sketchOf(samples);
    expect(isExact(s)).toBe(true);
    for (const q of [0.5, 0.9, 0.95, 0.99]) expect(quantile(s, q)).toBe(nearestRank(samples, q));
  });

  it("merges small sketches exactly (equal to the sketch of all samples), and falls back past the bound", () => {
    const a = [700, 1100, 12, 330];
    const b = [900, 5, 4000];
    const merged = mergeSketch(sketchOf(a), sketchOf(b));
    expect(isExact(merged)).toBe(true);
    expect(summarize(merged)).toEqual(summarize(sketchOf([...a, ...b])));
    expect(quantile(merged, 0.5)).toBe(700);
    // A merge over the bound drops the raw samples; the buckets still answer within 1 %.
    const big = Array.from({ length: EXACT_SAMPLE_LIMIT }, (_, i) => 50 + i);
    const over = mergeSketch(sketchOf(big), sketchOf([10_000]));
    expect(isExact(over)).toBe(false);
    expect(over.count).toBe(EXACT_SAMPLE_LIMIT + 1);
    const truth = nearestRank([...big, 10_000], 0.95) ?? 0;
    expect(Math.abs(quantile(over, 0.95) - truth) / truth).toBeLessThanOrEqual(0.0101);
    expect(isExact(sketchOf([...big, 1]))).toBe(false);
  });

  it("reads stored sketches back with their samples; older ones without samples use the buckets", () => {
    const stored = JSON.parse(JSON.stringify(sketchOf([700, 900, 1100])));
    expect(quantile(sketchFromJson(stored), 0.5)).toBe(900);
    const { samples: _dropped, ...older } = stored;
    expect(isExact(sketchFromJson(older))).toBe(false);
    expect(Math.abs(quantile(sketchFromJson(older), 0.5) - 900) / 900).toBeLessThanOrEqual(0.0101);
  });

  it("keeps exact count, avg, min and max", () => {
    expect(summarizeSamples([100, 200, 600])).toMatchObject({ count: 3, avg: 300, min: 100, max: 600 });
  });
});

describe("atReportedPrecision (the span cache's samples)", () => {
  it("changes no reported quantile of any merge that includes it", () => {
    let seed = 7;
    const rnd = () => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return seed / 2147483648;
    };
    for (let round = 0; round < 300; round++) {
      // Values on and around the 0.005 rounding edges, and ordinary ones.
      const draw = () => (rnd() < 0.3 ? Math.floor(rnd() * 2000) / 100 + 0.005 + (rnd() - 0.5) * 1e-9 : rnd() * 3000);
      const cached = Array.from({ length: 1 + Math.floor(rnd() * 400) }, draw);
      const fresh = Array.from({ length: Math.floor(rnd() * 20) }, draw);
      const exact = summarize(mergeSketch(sketchOf(cached), sketchOf(fresh)));
      const viaCache = summarize(mergeSketch(atReportedPrecision(sketchOf(cached)), sketchOf(fresh)));
      expect(viaCache).toEqual(exact);
    }
  });
});

describe("ascending (the sort behind every exact quantile)", () => {
  const sortedCopy = (xs: number[]) => [...xs].sort((a, b) => a - b);
  it("orders already sorted samples, a sorted run with a short tail, and shuffled samples alike", () => {
    const run = Array.from({ length: 300 }, (_, i) => i * 1.5);
    const cases = [
      run,
      [...run, 7.25, 0.5, 449.9, 1000, -1],
      [...run.slice(0, 10), ...[...run.slice(10)].reverse()],
      Array.from({ length: 257 }, (_, i) => (i * 7919) % 257),
      [],
      [3],
      [2, 2, 1, 1],
    ];
    for (const xs of cases) expect(Array.from(ascending(xs))).toEqual(sortedCopy(xs));
  });

  it("gives the same quantiles for a sorted cache with samples merged after it as for the samples in any order", () => {
    const cached = atReportedPrecision(sketchOf(Array.from({ length: 400 }, (_, i) => 50 + ((i * 37) % 400) * 1.37)));
    expect(cached.samples).toEqual(sortedCopy(cached.samples ?? []));
    const later = [1, 999.99, 120.5, 120.5, 3000];
    const merged = mergeSketch(mergeSketch(emptySketch(), cached), sketchOf(later));
    const shuffled = sketchOf([...later, ...[...(cached.samples ?? [])].reverse()]);
    expect(summarize(merged)).toEqual(summarize(shuffled));
  });
});

describe("packedSketch (the caches' stored form)", () => {
  const values = [700, 0.25, 1100.37, 900, 1e6, 3.5, 42, 42];
  it("round-trips through JSON to the same sketch and the same summaries", () => {
    const s = sketchOf(values);
    const back = sketchFromJson(JSON.parse(JSON.stringify(packedSketch(s))));
    expect(back.samples).toEqual(s.samples);
    expect(summarize(back)).toEqual(summarize(s));
    // Exact, it carries no buckets; pushed past the bound, it gets exactly the original's.
    const big = sketchOf(Array.from({ length: EXACT_SAMPLE_LIMIT }, (_, i) => i + 0.5));
    const viaPacked = sketchOf([]);
    mergeStoredSketch(viaPacked, packedSketch(s));
    mergeStoredSketch(viaPacked, big);
    expect(viaPacked).toEqual(mergeSketch(sketchOf(values), big));
  });
  it("an exact merge leaves buckets out, and leaving exactness brings them back complete, on every path", () => {
    const small = sketchOf([1, 2, 3, 0]);
    const acc = emptySketch();
    mergeStoredSketch(acc, packedSketch(small));
    mergeStoredSketch(acc, JSON.stringify(sketchOf([4, 5])));
    expect(acc.buckets).toEqual({}); // partial while exact
    const rest = Array.from({ length: EXACT_SAMPLE_LIMIT }, (_, i) => 10 + i);
    const all = [1, 2, 3, 0, 4, 5, ...rest];
    // mergeSketch, addSample and mergeStoredSketch each complete it when the sketch leaves exactness.
    const a = structuredClone(acc);
    mergeSketch(a, sketchOf(rest));
    const b = structuredClone(acc);
    for (const v of rest) addSample(b, v);
    const c = structuredClone(acc);
    mergeStoredSketch(c, JSON.stringify(sketchOf(rest)));
    for (const x of [a, b, c]) {
      expect(isExact(x)).toBe(false);
      expect(x.buckets).toEqual(sketchOf(all).buckets);
      expect(summarize(x)).toEqual(summarize(sketchOf(all)));
    }
  });
  it("merges like the plain stored sketch, exact while within the bound", () => {
    const a = sketchOf([1, 2, 3]);
    const b = sketchOf(values);
    const plain = emptySketch();
    mergeStoredSketch(plain, JSON.stringify(a));
    mergeStoredSketch(plain, JSON.stringify(b));
    const packed = emptySketch();
    mergeStoredSketch(packed, JSON.stringify(packedSketch(a)));
    mergeStoredSketch(packed, JSON.stringify(packedSketch(b)));
    expect(packed).toEqual(plain);
    expect(isExact(packed)).toBe(true);
  });
  it("a sketch past the bound has no samples to pack and merges from its buckets", () => {
    const big = sketchOf(Array.from({ length: EXACT_SAMPLE_LIMIT + 5 }, (_, i) => i + 1));
    expect(packedSketch(big)).not.toHaveProperty("packed_samples");
    const into = sketchOf([5]);
    mergeStoredSketch(into, packedSketch(big));
    expect(isExact(into)).toBe(false);
    expect(into.count).toBe(EXACT_SAMPLE_LIMIT + 6);
  });
  it("a damaged or short packed string is not trusted as exact", () => {
    const s = sketchOf([10.001, 20.002, 30.003]); // finer than 0.01 ms: float64s, with buckets beside them
    const p = packedSketch(s);
    expect(p).toHaveProperty("packed_buckets");
    for (const bad of ["", "not base64!", Buffer.from(new Float64Array([10, 20]).buffer).toString("base64"), Buffer.from(new Float64Array([10, Number.NaN, 30]).buffer).toString("base64")]) {
      const back = sketchFromJson({ ...p, packed_samples: bad });
      expect(isExact(back)).toBe(false);
      expect(back.count).toBe(3);
      expect(Math.abs(quantile(back, 0.5) - 20) / 20).toBeLessThanOrEqual(0.0101);
    }
  });
});

describe("packed_centis (samples at the reported precision, the span cache's form)", () => {
  const exactCopy = (value: unknown) => {
    const into = emptySketch();
    mergeStoredSketch(into, value);
    return into;
  };
  it("round-trips every 0.01 ms value from 0 to ~11.9 hours, in any order, with no buckets stored", () => {
    const values = [0, 0.01, 0.29, 1.15, 700, 900, 1100.37, 42, 42, 3000.5, 1e6, 42_949_672.95, 12.34, 0.07];
    const s = sketchOf(values);
    const p = packedSketch(s);
    expect(p).toHaveProperty("packed_centis");
    expect(p).not.toHaveProperty("packed_samples");
    expect(p).not.toHaveProperty("packed_buckets");
    const stored = JSON.parse(JSON.stringify(p));
    for (const back of [exactCopy(stored), exactCopy(decodeCachedSketch(stored)), exactCopy(decodeCachedSketch(JSON.stringify(p)))]) {
      expect(back.samples).toEqual(values);
      expect(summarize(back)).toEqual(summarize(s));
    }
    // Sorted samples (the span cache stores them so) take ~2 bytes each.
    const sorted = atReportedPrecision(sketchOf(Array.from({ length: 400 }, (_, i) => 80 + ((i * 7919) % 2000) * 1.37)));
    const bytes = Buffer.from(String(packedSketch(sorted).packed_centis), "base64").length;
    expect(bytes).toBeLessThanOrEqual(2 * 400);
    expect(exactCopy(packedSketch(sorted)).samples).toEqual(sorted.samples);
  });
  it("is not used for a value it cannot hold exactly: finer than 0.01 ms, negative or past ~11.9 hours", () => {
    for (const v of [0.001, 1 / 3, -5, 42_949_673, 1e12]) {
      const p = packedSketch(sketchOf([100, v]));
      expect(p, String(v)).not.toHaveProperty("packed_centis");
      expect(exactCopy(p).samples).toEqual([100, v]);
    }
  });
  it("a damaged, short or long string does not decode (its reader merges the cache again)", () => {
    const p = JSON.parse(JSON.stringify(packedSketch(sketchOf([10, 20, 30]))));
    expect(decodeCachedSketch(p)).not.toBeUndefined();
    const two = packedSketch(sketchOf([10, 20])).packed_centis;
    const four = packedSketch(sketchOf([10, 20, 30, 40])).packed_centis;
    const unterminated = Buffer.from([0x80, 0x80, 0x80]).toString("base64");
    const pastRange = Buffer.from([0xff, 0xff, 0xff, 0xff, 0xff, 0x7f]).toString("base64");
    for (const bad of ["", "not base64!", two, four, unterminated, pastRange, 42, null]) {
      expect(decodeCachedSketch({ ...p, packed_centis: bad }), String(bad)).toBeUndefined();
    }
    expect(decodeCachedSketch({ ...p, count: 2.5 })).toBeUndefined();
    // Other stored forms pass through as they are.
    const plain = JSON.parse(JSON.stringify(sketchOf([1, 2])));
    expect(decodeCachedSketch(plain)).toEqual(plain);
    expect(decodeCachedSketch(null)).toBeNull();
  });
});
