import { describe, expect, it } from "vitest";
import { verdictOf } from "../../src/diagnostics/gates.js";

describe("diagnostics verdict ladder", () => {
  it("is the worst gate: PASS < WARN < UNKNOWN < FAIL", () => {
    expect(verdictOf(["PASS", "PASS"])).toBe("PASS");
    expect(verdictOf(["PASS", "WARN"])).toBe("WARN");
    expect(verdictOf(["WARN", "UNKNOWN", "PASS"])).toBe("UNKNOWN");
    expect(verdictOf(["UNKNOWN", "FAIL", "WARN"])).toBe("FAIL");
  });

  it("a run that gated nothing is UNKNOWN, never a pass", () => {
    expect(verdictOf([])).toBe("UNKNOWN");
  });
});
