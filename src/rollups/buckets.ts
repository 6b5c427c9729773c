/**
 * Rollup bucket grains in UTC: hours and days are fixed lengths, calendar months are not (a month's
 * bucket is found by a function). A leaf module: the rollup writers, the fleet index's window and the
 * billing month all take their bounds from here.
 */

export const HOUR_MS = 3_600_000;
export const DAY_MS = 86_400_000;

/** `t` rounded down to a multiple of the fixed grain `g` (HOUR_MS, DAY_MS): the bucket holding it. */
export const floorTo = (t: number, g: number) => Math.floor(t / g) * g;
/** `t` rounded up to a multiple of the fixed grain `g`: the first bucket boundary at or after it. */
export const ceilTo = (t: number, g: number) => Math.ceil(t / g) * g;

/** The first instant of the UTC calendar month holding `ms`. */
export function monthStartMs(ms: number): number {
  const d = new Date(ms);
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1);
}

/** The first instant of the next UTC calendar month after the one holding `ms`. */
export function nextMonthMs(ms: number): number {
  const d = new Date(ms);
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1);
}
