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
