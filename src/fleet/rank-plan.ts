import { PERIOD_SECONDS, type Period } from "../reports/window.js";
import { DAY_MS, HOUR_MS } from "../rollups/buckets.js";
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

/** A window starting this few days before today reads day rows instead of two checkpoints. */
const DAY_ROWS_MAX_DAYS = 2;

const floorTo = (t: number, g: number) => Math.floor(t / g) * g;
const ceilTo = (t: number, g: number) => Math.ceil(t / g) * g;

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
 * from the window's first day boundary (or ever, for `all`) to today's start (yesterday's, in the grace
 * minutes after midnight), plus the day rows since, minus the raw rows dated after now inside today,
 * and the window's ≤ 12-hour start edge. So a window of any length reads one checkpoint row, one or two
 * day rows and at most 12 hour rows per agent: O(agents).
 * `wallNowMs` is the real clock, which decides which checkpoints may exist (CHECKPOINT_GRACE_MS).
 */
export function rankTerms(period: Period, now: Date, wallNowMs: number): RankTerm[] {
  const end = now.getTime();
  const today = floorTo(end, DAY_MS);
  const tomorrow = today + DAY_MS;
  const usable = (at: number) => at + CHECKPOINT_GRACE_MS <= wallNowMs;
  const base = usable(today) ? today : today - DAY_MS;
  const after: RankTerm = { kind: "raw", sign: -1, from: now, fromInclusive: false, to: new Date(tomorrow), toInclusive: false };
  const edge = period === "all" ? null : startEdge(end - PERIOD_SECONDS[period] * 1000);
  const from = edge?.from ?? null;
  const days = (a: number | null): RankTerm => ({ kind: "day", sign: 1, from: a === null ? null : new Date(a), to: new Date(tomorrow) });
  // A near start, or a checkpoint that may not exist yet (a `now` ahead of the clock), reads the day
  // rows from the start instead.
  if (!usable(base) || (from !== null && (from >= base || today - from <= DAY_ROWS_MAX_DAYS * DAY_MS))) {
    return [days(from), after, ...(edge?.terms ?? [])];
  }
  const span: RankTerm = { kind: "checkpoint", sign: 1, from: from === null ? null : new Date(from), at: new Date(base) };
  return [span, days(base), after, ...(edge?.terms ?? [])];
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
