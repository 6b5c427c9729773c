import { type Period, type Segment, windowSegments } from "../reports/window.js";
import { DAY_MS, monthStartMs, nextMonthMs } from "../rollups/buckets.js";
import { CHECKPOINT_GRACE_MS } from "../rollups/fleet-checkpoints.js";

/** A fleet-index window segment: the report segments plus whole calendar months (the monthly rollups). */
export interface FleetSegment extends Omit<Segment, "source"> {
  source: Segment["source"] | "month";
}

/** A segment of the page's sketches: a fleet segment, or a running-totals span of whole days [from, to) (from null: unbounded). */
export type SketchSegment = FleetSegment | { source: "span"; from: Date | null; to: Date; toInclusive: false };

/** A day segment with every whole UTC calendar month inside it read from the monthly rollups instead. */
export function monthsOfDays(seg: Segment): FleetSegment[] {
  const to = seg.to.getTime();
  const me = monthStartMs(to);
  const from = seg.from?.getTime() ?? null;
  const ms = from === null ? null : from === monthStartMs(from) ? from : nextMonthMs(from);
  if (ms !== null && ms >= me) return [seg];
  const out: FleetSegment[] = [];
  if (from !== null && ms !== null && from < ms) out.push({ ...seg, from: seg.from, to: new Date(ms) });
  out.push({ ...seg, source: "month", from: ms === null ? null : new Date(ms), to: new Date(me) });
  if (me < to) out.push({ ...seg, from: new Date(me), to: seg.to });
  return out;
}

/**
 * The report window (windowSegments: raw edge hours, hour and day rollups) with every whole UTC
 * calendar month inside a day segment read from the per-agent monthly rollups instead: `period=all`
 * then sums one row per agent and month, plus the current month's days. Edges are unchanged, so the
 * totals are the same to the cent and to the row.
 */
export function fleetWindowSegments(period: Period, now: Date): FleetSegment[] {
  return windowSegments(period, now).flatMap((seg) => (seg.source === "day" ? monthsOfDays(seg) : [seg]));
}

/**
 * The segments of the page's sketches: the report window with its whole days [from, today) read as one
 * running-totals span (its cached sketches: src/fleet/span-sketches.ts) instead of a row per agent and
 * day or month. Sketches cannot be subtracted, so the span is exactly the window's day segment, never
 * the ranking's rounded one. In the grace minutes after midnight (CHECKPOINT_GRACE_MS, wallNowMs the
 * real clock) the span ends a day earlier and yesterday is read from its day rows.
 */
export function sketchWindowSegments(period: Period, now: Date, wallNowMs: number): SketchSegment[] {
  const usable = (at: number) => at + CHECKPOINT_GRACE_MS <= wallNowMs;
  return windowSegments(period, now).flatMap((seg): SketchSegment[] => {
    if (seg.source !== "day") return [seg];
    const to = seg.to.getTime();
    if (usable(to)) return [{ source: "span", from: seg.from, to: seg.to, toInclusive: false }];
    const prev = to - DAY_MS;
    if (usable(prev) && (seg.from === null || seg.from.getTime() < prev)) {
      return [{ source: "span", from: seg.from, to: new Date(prev), toInclusive: false }, ...monthsOfDays({ ...seg, from: new Date(prev) })];
    }
    return monthsOfDays(seg);
  });
}

/** The running-totals spans a sketch plan reads (for ensureCheckpoints). */
export function sketchSpans(segments: SketchSegment[]): { from: Date | null; at: Date }[] {
  return segments.flatMap((s) => (s.source === "span" ? [{ from: s.from, at: s.to }] : []));
}
