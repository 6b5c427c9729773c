import { PERIOD_SECONDS, type Period } from "../reports/window.js";
import { ceilTo, DAY_MS, floorTo, HOUR_MS } from "../rollups/buckets.js";
import { CHECKPOINT_GRACE_MS } from "../rollups/fleet-checkpoints.js";

/**
 * One signed source of the fleet index's ranking. A window's per-agent figure is the sum of its
 * terms: `checkpoint` = every row dated in [from, at) (from null: before `at`;
 * src/rollups/fleet-checkpoints.ts); `hour`/`day` =
 * the rollup rows whose bucket is in [from, to) (from null: unbounded); `raw` = request rows and turns dated in the range.
 */
export type RankTerm =
  | { kind: "checkpoint"; sign: 1 | -1; from: Date | null; at: Date }
  | { kind: "hour"; sign: 1 | -1; from: Date | null; to: Date }
  | { kind: "day"; sign: 1 | -1; from: Date | null; to: Date }
  | { kind: "raw"; sign: 1 | -1; from: Date; fromInclusive: boolean; to: Date; toInclusive: boolean };

/** Raw rows in [from, to) (a range that is empty gives no term). */
function rawRange(sign: 1 | -1, from: number, to: number): RankTerm[] {
  return from < to ? [{ kind: "raw", sign, from: new Date(from), fromInclusive: true, to: new Date(to), toInclusive: false }] : [];
}

function hourRange(sign: 1 | -1, from: number, to: number): RankTerm[] {
  return from < to ? [{ kind: "hour", sign, from: new Date(from), to: new Date(to) }] : [];
}

/**
 * Every row dated in [start, start's day end) or [day start, start): the window's start edge, read
 * from hour rows and raw rows, whichever way round is shorter (≤ 12 hours of hour rows).
 * Returns the day boundary the rest of the window is measured from, and the signed edge terms.
 */
function startEdge(start: number): { from: number; terms: RankTerm[] } {
  const dayStart = floorTo(start, DAY_MS);
  if (start === dayStart) return { from: start, terms: [] };
  if (start - dayStart <= DAY_MS / 2) {
    // Window = [dayStart, …) minus [dayStart, start).
    const h = floorTo(start, HOUR_MS);
    return { from: dayStart, terms: [...hourRange(-1, dayStart, h), ...rawRange(-1, h, start)] };
  }
  // Window = [start, nextDay) plus [nextDay, …).
  const next = dayStart + DAY_MS;
  const h = ceilTo(start, HOUR_MS);
  return { from: next, terms: [...rawRange(1, start, h), ...hourRange(1, h, next)] };
}

/**
 * The ranking's terms for `period` ending at `now` (inclusive): the checkpoint of every row dated
 * from the window's first hour boundary (or ever, for `all`) to today's start (yesterday's, in the
 * grace minutes after midnight), plus the day rows since, minus the raw rows dated after now inside
 * today, plus the raw rows of the window's first partial hour. So a window of any length reads one
 * checkpoint row, one or two day rows and an hour of raw rows per agent: O(agents). A bounded
 * window's span starts at an hour, so it is built once an hour (stepped from the last one by an hour
 * of hour rows: src/rollups/fleet-checkpoints.ts); the window's edge used to be up to 12 hours of
 * hour rows per agent, ~11k rows of a 10k-agent ranking's ~39k (docs/PERFORMANCE.md).
 * `wallNowMs` is the real clock, which decides which checkpoints may exist (CHECKPOINT_GRACE_MS).
 */
export function rankTerms(period: Period, now: Date, wallNowMs: number): RankTerm[] {
  const end = now.getTime();
  const today = floorTo(end, DAY_MS);
  const tomorrow = today + DAY_MS;
  const usable = (at: number) => at + CHECKPOINT_GRACE_MS <= wallNowMs;
  const base = usable(today) ? today : today - DAY_MS;
  const after: RankTerm = { kind: "raw", sign: -1, from: now, fromInclusive: false, to: new Date(tomorrow), toInclusive: false };
  const days = (a: number | null): RankTerm => ({ kind: "day", sign: 1, from: a === null ? null : new Date(a), to: new Date(tomorrow) });
  if (period === "all") {
    if (!usable(base)) return [days(null), after];
    return [{ kind: "checkpoint", sign: 1, from: null, at: new Date(base) }, days(base), after];
  }
  const start = end - PERIOD_SECONDS[period] * 1000;
  const hour = ceilTo(start, HOUR_MS);
  if (usable(base) && hour < base) {
    return [...rawRange(1, start, hour), { kind: "checkpoint", sign: 1, from: new Date(hour), at: new Date(base) }, days(base), after];
  }
  // A span that may not exist yet (a `now` ahead of the clock), or none to read (the window starts
  // after base, in the grace minutes): day rows from the start's day, with its ≤ 12-hour edge.
  const edge = startEdge(start);
  return [days(edge.from), after, ...edge.terms];
}

/** A checkpoint's span: rows dated in [from, at) (from null: before at). */
export interface CheckpointSpan {
  from: Date | null;
  at: Date;
}

/** The checkpoint spans a plan reads. */
export function checkpointSpans(terms: RankTerm[]): CheckpointSpan[] {
  return terms.flatMap((t) => (t.kind === "checkpoint" ? [{ from: t.from, at: t.at }] : []));
}
