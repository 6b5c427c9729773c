import { ceilTo, DAY_MS, floorTo, HOUR_MS } from "../rollups/buckets.js";

/** Reporting periods. today/week/month are rolling trailing windows; all is since the first row. */
export const PERIOD_SECONDS = { today: 86_400, week: 7 * 86_400, month: 30 * 86_400 } as const;
export const COST_PERIODS = ["today", "week", "month", "all"] as const;
export const LATENCY_PERIODS = ["today", "week", "month"] as const;
export type Period = (typeof COST_PERIODS)[number];

/**
 * The one rolling window: [now - period, now]. Every spend figure (costs, metrics, a project's
 * today_spend and budget_status) ends at now; rows dated ahead of now count once their time comes.
 */
export function rollingWindow(period: Exclude<Period, "all">, now: Date): { from: Date; to: Date } {
  return { from: new Date(now.getTime() - PERIOD_SECONDS[period] * 1000), to: now };
}

/** A time range served from one source: raw request rows, hour rollups or day rollups. [from, to). */
export interface Segment {
  source: "raw" | "hour" | "day";
  /** null = unbounded below (period all). */
  from: Date | null;
  /** The end of the range (every window ends at now). */
  to: Date;
  /** Raw tails of rolling windows include `now` itself. */
  toInclusive: boolean;
}

/**
 * Splits [start, now] into whole day buckets, whole hour buckets and the partial edge hours, which
 * are read from raw rows: totals are exact (to the cent, and to the row) whatever the window.
 */
export function windowSegments(period: Period, now: Date): Segment[] {
  const end = now.getTime();
  const start = period === "all" ? null : end - PERIOD_SECONDS[period] * 1000;
  const he = floorTo(end, HOUR_MS);
  const tail: Segment = { source: "raw", from: new Date(he), to: now, toInclusive: true };
  if (start === null) {
    const de = floorTo(he, DAY_MS);
    const out: Segment[] = [{ source: "day", from: null, to: new Date(de), toInclusive: false }];
    if (de < he) out.push({ source: "hour", from: new Date(de), to: new Date(he), toInclusive: false });
    return [...out, tail];
  }
  const hs = ceilTo(start, HOUR_MS);
  if (hs >= he) return [{ source: "raw", from: new Date(start), to: now, toInclusive: true }];
  const out: Segment[] = [];
  if (start < hs) out.push({ source: "raw", from: new Date(start), to: new Date(hs), toInclusive: false });
  const ds = ceilTo(hs, DAY_MS);
  const de = floorTo(he, DAY_MS);
  if (ds < de) {
    if (hs < ds) out.push({ source: "hour", from: new Date(hs), to: new Date(ds), toInclusive: false });
    out.push({ source: "day", from: new Date(ds), to: new Date(de), toInclusive: false });
    if (de < he) out.push({ source: "hour", from: new Date(de), to: new Date(he), toInclusive: false });
  } else {
    out.push({ source: "hour", from: new Date(hs), to: new Date(he), toInclusive: false });
  }
  out.push(tail);
  return out;
}

/**
 * A range the reports read: a Segment, or `today`, the current UTC day up to now [from, to], served
 * whole from the day's rollup rows (src/reports/sources.ts). Those hold every row of the day stored so
 * far (ingest folds a row into them in the row's own transaction), so while no row is dated after now
 * within the day they are exactly the rows of [from, now]; otherwise that statement reads the raw rows.
 */
export interface ReportSegment extends Omit<Segment, "source"> {
  source: Segment["source"] | "today";
}

/**
 * windowSegments with everything from today's UTC midnight on (its whole hours and the raw tail up
 * to now) as one `today` segment: one day row per key instead of up to 23 hour rows and the tail's raw
 * rows, whose number grows with the traffic (an hour's raw rows, and hour sketches with more buckets).
 */
export function reportSegments(period: Period, now: Date): ReportSegment[] {
  const de = floorTo(now.getTime(), DAY_MS);
  const out: ReportSegment[] = [];
  for (const s of windowSegments(period, now)) {
    const to = s.to.getTime();
    if (to < de || (to === de && !s.toInclusive)) out.push(s);
    else if (s.from === null || s.from.getTime() < de) out.push({ ...s, to: new Date(de), toInclusive: false });
  }
  out.push({ source: "today", from: new Date(de), to: now, toInclusive: true });
  return out;
}
