import { describe, expect, it } from "vitest";
import { INGEST_BATCH_CAP, INGEST_MAX_DEPTH, scanTopLevelArray } from "../../src/ingest/batch.js";

describe("scanTopLevelArray (the cap check before JSON.parse)", () => {
  it("counts top-level elements of any kind, ignoring brackets, commas and escaped quotes inside strings", () => {
    expect(scanTopLevelArray("[]")).toEqual({ isArray: true, count: 0, depth: 1 });
    expect(scanTopLevelArray("  [ ]  ").count).toBe(0);
    expect(scanTopLevelArray('[1, "a,b", {"k": [1,2,3]}, null, true, "\\"],[", "\\\\"]').count).toBe(7);
    expect(scanTopLevelArray('[{"a":"}]"},{"b":"\\\\\\"["}]').count).toBe(2);
  });

  it("agrees with JSON.parse on generated arrays", () => {
    for (const n of [1, 2, 17, 500, INGEST_BATCH_CAP]) {
      const arr = Array.from({ length: n }, (_, i) => (i % 3 === 0 ? { s: `x"],[${i}\\` } : i % 3 === 1 ? [i, [i]] : `s${i},`));
      expect(scanTopLevelArray(JSON.stringify(arr)).count).toBe(n);
    }
  });

  it("stops early past the cap and past the depth limit", () => {
    expect(scanTopLevelArray(`[${"1,".repeat(5000)}1]`).count).toBe(INGEST_BATCH_CAP + 1);
    expect(scanTopLevelArray("[".repeat(10_000)).depth).toBe(INGEST_MAX_DEPTH + 1);
    expect(scanTopLevelArray('{"a":'.repeat(10_000)).depth).toBe(INGEST_MAX_DEPTH + 1);
  });

  it("reports non-arrays", () => {
    expect(scanTopLevelArray('{"records": [1,2]}')).toMatchObject({ isArray: false, count: 0 });
    expect(scanTopLevelArray("42").isArray).toBe(false);
    expect(scanTopLevelArray("").isArray).toBe(false);
  });
});
