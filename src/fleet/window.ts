import { type Period, type Segment, windowSegments } from "../reports/window.js";
import { monthStartMs, nextMonthMs } from "../rollups/buckets.js";

/** A fleet-index window segment: the report segments plus whole calendar months (the monthly rollups). */
export interface FleetSegment extends Omit<Segment, "source"> {
  source: Segment["source"] | "month";
}

/**
 * The report window (windowSegments: raw edge hours, hour and day rollups) with every whole UTC
 * calendar month inside a day segment read from the per-agent monthly rollups instead: `period=all`
 * then sums one row per agent and month, plus the current month's days. Edges are unchanged, so the
 * totals are the same to the cent and to the row.
 */
export function fleetWindowSegments(period: Period, now: Date): FleetSegment[] {
  return windowSegments(period, now).flatMap((seg): FleetSegment[] => {
    if (seg.source !== "day") return [seg];
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
  });
}
