import { describe, expect, it } from "vitest";
import { checkpointSpans, type RankTerm, rankTerms } from "../../src/fleet/rank-plan.js";
import { CHECKPOINT_GRACE_MS } from "../../src/rollups/fleet-checkpoints.js";
import { PERIOD_SECONDS } from "../../src/reports/window.js";
import { DAY_MS, HOUR_MS } from "../../src/rollups/buckets.js";

function lcg(seed: number) {
  let s = seed;
  return () => {
    s = (s * 1103515245 + 12345) % 2147483648;
    return s / 2147483648;
  };
}

/** How many of `times` a term counts, with the meaning each source has in SQL. */
function count(term: RankTerm, times: number[]): number {
  const inTerm = (t: number) => {
    switch (term.kind) {
      case "checkpoint":
        return t < term.at.getTime() && (term.from === null || t >= term.from.getTime());
      case "hour":
      case "day": {
        const bucket = Math.floor(t / (term.kind === "hour" ? HOUR_MS : DAY_MS)) * (term.kind === "hour" ? HOUR_MS : DAY_MS);
        return (term.from === null || bucket >= term.from.getTime()) && bucket < term.to.getTime();
      }
      case "raw":
        return (
          (term.fromInclusive ? t >= term.from.getTime() : t > term.from.getTime()) &&
          (term.toInclusive ? t <= term.to.getTime() : t < term.to.getTime())
        );
    }
  };
  return term.sign * times.filter(inTerm).length;
}

/** The ranking's algebra: the signed terms count exactly the rows dated in [now - period, now]. */
describe("rankTerms", () => {
  const rnd = lcg(11);
  const base = Date.UTC(2026, 10, 23, 20, 15, 30, 457);
  // Rows over 70 days around the nows, some on hour and day boundaries, some after now.
  const times: number[] = [];
  for (let i = 0; i < 4000; i++) times.push(base - 60 * DAY_MS + Math.floor(rnd() * 70 * DAY_MS));
  for (let d = 0; d < 70; d++) times.push(Math.floor(base / DAY_MS) * DAY_MS - 60 * DAY_MS + d * DAY_MS, base - d * HOUR_MS);

  const nows = [
    base,
    Math.floor(base / DAY_MS) * DAY_MS,
    Math.floor(base / DAY_MS) * DAY_MS + 5 * 60_000,
    Math.floor(base / DAY_MS) * DAY_MS + 11 * HOUR_MS + 59 * 60_000,
    Math.floor(base / DAY_MS) * DAY_MS + 12 * HOUR_MS,
    Math.floor(base / DAY_MS) * DAY_MS + 12 * HOUR_MS + 1,
    Math.floor(base / HOUR_MS) * HOUR_MS,
    ...Array.from({ length: 40 }, () => base - 5 * DAY_MS + Math.floor(rnd() * 5 * DAY_MS)),
  ];
  // The real clock: long after, just past the grace, inside it, and before now (a `now` ahead of it).
  const walls = (now: number) => {
    const today = Math.floor(now / DAY_MS) * DAY_MS;
    return [now + 3 * DAY_MS, today + CHECKPOINT_GRACE_MS, today + CHECKPOINT_GRACE_MS - 1, now, now - 2 * DAY_MS];
  };

  it("every period, now and clock", () => {
    let checked = 0;
    for (const now of nows) {
      for (const wall of walls(now)) {
        for (const period of ["today", "week", "month", "all"] as const) {
          const terms = rankTerms(period, new Date(now), wall);
          const from = period === "all" ? Number.NEGATIVE_INFINITY : now - PERIOD_SECONDS[period] * 1000;
          const want = times.filter((t) => t >= from && t <= now).length;
          const got = terms.reduce((s, term) => s + count(term, times), 0);
          expect(got, `${period} now=${new Date(now).toISOString()} wall=${new Date(wall).toISOString()}`).toBe(want);
          // Never a checkpoint that may not be built yet.
          for (const span of checkpointSpans(terms)) expect(span.at.getTime() + CHECKPOINT_GRACE_MS).toBeLessThanOrEqual(wall);
          checked++;
        }
      }
    }
    expect(checked).toBeGreaterThan(900);
  });

  it("today, week and month read one span from the window's first hour, today's day rows and an hour of raw rows", () => {
    const now = new Date("2026-11-23T20:15:30Z");
    const wall = now.getTime();
    const starts = { today: "2026-11-22T21:00:00Z", week: "2026-11-16T21:00:00Z", month: "2026-10-24T21:00:00Z" };
    for (const period of ["today", "week", "month"] as const) {
      const terms = rankTerms(period, now, wall);
      expect(checkpointSpans(terms)).toEqual([{ from: new Date(starts[period]), at: new Date("2026-11-23T00:00:00Z") }]);
      expect(terms.filter((t) => t.kind === "hour")).toEqual([]);
      const days = terms.flatMap((t) => (t.kind === "day" && t.from ? [(t.to.getTime() - t.from.getTime()) / DAY_MS] : []));
      expect(days).toEqual([1]);
      const raw = terms.flatMap((t) => (t.kind === "raw" && t.sign === 1 ? [t.to.getTime() - t.from.getTime()] : []));
      expect(raw).toEqual([HOUR_MS - 15 * 60_000 - 30_000]);
    }
    expect(checkpointSpans(rankTerms("all", now, wall))).toEqual([{ from: null, at: new Date("2026-11-23T00:00:00Z") }]);
  });
});
