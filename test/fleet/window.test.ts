import { describe, expect, it } from "vitest";
import { fleetWindowSegments } from "../../src/fleet/window.js";

const seg = (source: string, from: string | null, to: string, toInclusive = false) => ({
  source,
  from: from === null ? null : new Date(from),
  to: new Date(to),
  toInclusive,
});

/** Whole calendar months inside a window come from the monthly rollups; the edges are unchanged. */
describe("fleetWindowSegments", () => {
  it("period=all: months before the current one, then its days, hours and the raw tail", () => {
    expect(fleetWindowSegments("all", new Date("2026-11-23T20:15:30Z"))).toEqual([
      seg("month", null, "2026-11-01T00:00:00Z"),
      seg("day", "2026-11-01T00:00:00Z", "2026-11-23T00:00:00Z"),
      seg("hour", "2026-11-23T00:00:00Z", "2026-11-23T20:00:00Z"),
      seg("raw", "2026-11-23T20:00:00Z", "2026-11-23T20:15:30Z", true),
    ]);
  });

  it("period=all on the first day of a month: no day segment", () => {
    expect(fleetWindowSegments("all", new Date("2026-11-01T03:00:00Z"))).toEqual([
      seg("month", null, "2026-11-01T00:00:00Z"),
      seg("hour", "2026-11-01T00:00:00Z", "2026-11-01T03:00:00Z"),
      seg("raw", "2026-11-01T03:00:00Z", "2026-11-01T03:00:00Z", true),
    ]);
  });

  it("a rolling month holding all of February: edge hours and days around the month", () => {
    expect(fleetWindowSegments("month", new Date("2026-03-02T05:30:00Z"))).toEqual([
      seg("raw", "2026-01-31T05:30:00Z", "2026-01-31T06:00:00Z"),
      seg("hour", "2026-01-31T06:00:00Z", "2026-02-01T00:00:00Z"),
      seg("month", "2026-02-01T00:00:00Z", "2026-03-01T00:00:00Z"),
      seg("day", "2026-03-01T00:00:00Z", "2026-03-02T00:00:00Z"),
      seg("hour", "2026-03-02T00:00:00Z", "2026-03-02T05:00:00Z"),
      seg("raw", "2026-03-02T05:00:00Z", "2026-03-02T05:30:00Z", true),
    ]);
  });

  it("a rolling month ending on a month boundary, starting on the previous one (30-day month)", () => {
    expect(fleetWindowSegments("month", new Date("2026-12-01T00:00:00Z"))).toEqual([
      seg("month", "2026-11-01T00:00:00Z", "2026-12-01T00:00:00Z"),
      seg("raw", "2026-12-01T00:00:00Z", "2026-12-01T00:00:00Z", true),
    ]);
  });

  it("windows without a whole month are the report segments", () => {
    const now = new Date("2026-11-23T20:15:30Z");
    for (const period of ["today", "week", "month"] as const) {
      const segs = fleetWindowSegments(period, now);
      expect(segs.some((s) => s.source === "month")).toBe(false);
    }
  });
});
