import { type Period, type Segment, windowSegments } from "../reports/window.js";
import { DAY_MS, monthStartMs, nextMonthMs } from "../rollups/buckets.js";
import { CHECKPOINT_GRACE_MS } from "../rollups/fleet-checkpoints.js";

/** A fleet-index window segment: the report segments plus whole calendar months (the monthly rollups). */
export interface FleetSegment extends Omit<Segment, "source"> {
  source: Segment["source"] | "month";
}

/** A segment of the page's figures: a fleet segment, or a running-totals span of whole days [from, to) (from null: unbounded). */
export type PageSegment = FleetSegment | { source: "span"; from: Date | null; to: Date; toInclusive: false };

/**
 * A day segment with every whole UTC calendar month inside it read from the per-agent monthly rollups
 * instead (one row per agent and month), the days around them from the day rows: the same totals to
 * the cent and to the row.
 */
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
 * The segments of the page's figures (totals and sketches): the report window with its whole days
 * [from, today) read as one running-totals span (its sums, and its cached sketches:
 * src/fleet/span-sketches.ts) instead of a row per agent and day or month. Sketches cannot be
 * subtracted, so the span is exactly the window's day segment, never the ranking's rounded one. In the grace minutes after midnight (CHECKPOINT_GRACE_MS, wallNowMs the
 * real clock) the span ends a day earlier and yesterday is read from its day rows.
 */
export function pageWindowSegments(period: Period, now: Date, wallNowMs: number): PageSegment[] {
  const usable = (at: number) => at + CHECKPOINT_GRACE_MS <= wallNowMs;
  return windowSegments(period, now).flatMap((seg): PageSegment[] => {
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

/** The running-totals spans a page plan reads (for ensureCheckpoints). */
export function pageSpans(segments: PageSegment[]): { from: Date | null; at: Date }[] {
  return segments.flatMap((s) => (s.source === "span" ? [{ from: s.from, at: s.to }] : []));
}
