import { describe, expect, it } from "vitest";
import { JSON_MAX_DEPTH, jsonBoundsProblem } from "../../src/http/body.js";
import { INGEST_BATCH_CAP, INGEST_MAX_DEPTH, scanTopLevelArray } from "../../src/ingest/batch.js";

describe("scanTopLevelArray (the cap check before JSON.parse)", () => {
  it("counts top-level elements of any kind, ignoring brackets, commas and escaped quotes inside strings", () => {
    expect(scanTopLevelArray("[]")).toEqual({ isArray: true, count: 0, depth: 1, values: 1, whole: true });
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

  it("counts values as jsonBoundsProblem does, over a whole value only", () => {
    const texts = ['[1, "a,b", {"k": [1,2,3]}, null]', '{"a": [{"b": 1}, 2], "c": "[,{"}', " [ [ ] , { } ] \n", JSON.stringify([{ x: [1, 2, { y: "\\\"," }] }])];
    for (const text of texts) {
      const scan = scanTopLevelArray(text);
      expect(scan.whole, text).toBe(true);
      // Within the bounds it would refuse past: the same count, read from the refusal's threshold.
      expect(jsonBoundsProblem(text, JSON_MAX_DEPTH, scan.values), text).toBeNull();
      expect(jsonBoundsProblem(text, JSON_MAX_DEPTH, scan.values - 1), text).not.toBeNull();
    }
    // Not a whole value: unbalanced, trailing text, a scalar, an unterminated string.
    for (const text of ["[1, 2", "[1] x", "[1],[2]", "42", '["abc']) expect(scanTopLevelArray(text).whole, text).toBe(false);
  });

  it("reports non-arrays", () => {
    expect(scanTopLevelArray('{"records": [1,2]}')).toMatchObject({ isArray: false, count: 0 });
    expect(scanTopLevelArray("42").isArray).toBe(false);
    expect(scanTopLevelArray("").isArray).toBe(false);
  });
});
