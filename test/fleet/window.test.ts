import { describe, expect, it } from "vitest";
import { pageSpans, pageWindowSegments } from "../../src/fleet/window.js";
import type { Period } from "../../src/reports/window.js";
import { windowSegments } from "../../src/reports/window.js";
import { CHECKPOINT_GRACE_MS } from "../../src/rollups/fleet-checkpoints.js";

const seg = (source: string, from: string | null, to: string, toInclusive = false) => ({
  source,
  from: from === null ? null : new Date(from),
  to: new Date(to),
  toInclusive,
});

/** Before any span may exist (a wall clock of 0), whole months come from the monthly rollups, the edges unchanged. */
const fleetWindowSegments = (period: Period, now: Date) => pageWindowSegments(period, now, 0);

describe("pageWindowSegments without a span", () => {
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

/** The sketches read the window's whole days as one running-totals span, exactly (sketches cannot be subtracted). */
describe("pageWindowSegments", () => {
  const DAY = 86_400_000;

  it("period=all: one span from the beginning to today, then today's hours and the raw tail", () => {
    const now = new Date("2026-11-23T20:15:30Z");
    expect(pageWindowSegments("all", now, now.getTime())).toEqual([
      seg("span", null, "2026-11-23T00:00:00Z"),
      seg("hour", "2026-11-23T00:00:00Z", "2026-11-23T20:00:00Z"),
      seg("raw", "2026-11-23T20:00:00Z", "2026-11-23T20:15:30Z", true),
    ]);
  });

  it("in the grace minutes after midnight the span ends a day earlier and yesterday is read from its day rows", () => {
    const now = new Date("2026-11-23T00:05:00Z");
    expect(pageWindowSegments("week", now, now.getTime())).toEqual([
      seg("raw", "2026-11-16T00:05:00Z", "2026-11-16T01:00:00Z"),
      seg("hour", "2026-11-16T01:00:00Z", "2026-11-17T00:00:00Z"),
      seg("span", "2026-11-17T00:00:00Z", "2026-11-22T00:00:00Z"),
      seg("day", "2026-11-22T00:00:00Z", "2026-11-23T00:00:00Z"),
      seg("raw", "2026-11-23T00:00:00Z", "2026-11-23T00:05:00Z", true),
    ]);
  });

  it("tiles the report window exactly, with spans only the clock allows, for every period, now and clock", () => {
    const base = Date.parse("2026-03-02T00:00:00Z");
    for (const period of ["today", "week", "month", "all"] as const) {
      for (let k = 0; k < 200; k++) {
        const now = new Date(base + k * 37 * 60_000 + (k % 3) * 1234);
        for (const lag of [-DAY, 0, CHECKPOINT_GRACE_MS - 1, CHECKPOINT_GRACE_MS, 3 * CHECKPOINT_GRACE_MS]) {
          const wall = now.getTime() + lag;
          const segs = pageWindowSegments(period, now, wall);
          const report = windowSegments(period, now);
          // Same start, same end, contiguous, no overlap.
          expect(segs[0]?.from).toEqual(report[0]?.from);
          expect(segs.at(-1)).toEqual(report.at(-1));
          for (let i = 1; i < segs.length; i++) expect(segs[i]?.from).toEqual(segs[i - 1]?.to);
          for (const span of pageSpans(segs)) {
            expect(span.at.getTime() % DAY).toBe(0);
            expect(span.at.getTime() + CHECKPOINT_GRACE_MS).toBeLessThanOrEqual(wall);
          }
        }
      }
    }
  });
});
