import { and, type SQL, sql } from "drizzle-orm";
import type { AnyPgColumn } from "drizzle-orm/pg-core";
import { z } from "zod";
import { tenantCondition } from "../auth/context.js";
import { MODALITIES } from "../config/schema.js";
import type { Db } from "../db/client.js";
import { requestModelRollups, requestModelRollupsDaily, requestRollups, requestRollupsDaily } from "../db/schema/index.js";
import { moneyNumber } from "../money.js";
import { PROJECT_FILTER_MAX } from "../reports/query.js";
import { queryRows, type ReportScope } from "../reports/sources.js";
import { COST_PERIODS, LATENCY_PERIODS, PERIOD_SECONDS, type Period } from "../reports/window.js";
import { DAY_MS, HOUR_MS } from "../rollups/apply.js";
import { type LatencySketch, summarize } from "../stats/summary.js";
import { type ParsedSketch, ROW_VERSION, readSketchRows, type SketchCache, type SketchRow, sketchCacheOf, sketchOfParts } from "../reports/sketch-cache.js";
import { type CostSeries, type LatencySeries, SERIES_BUCKETS } from "./schemas.js";

export { SERIES_BUCKETS };
export type SeriesBucket = (typeof SERIES_BUCKETS)[number];
/** Most points one series answers (a month of hours); `all` with hour buckets would be unbounded. */
export const SERIES_MAX_POINTS = 31 * 24;

const project = z
  .string()
  .max(PROJECT_FILTER_MAX)
  .optional()
  .transform((v) => (v === undefined || v === "" ? null : v));
const bucket = z.enum(SERIES_BUCKETS).optional();
const hourNeedsWindow = (q: { period: Period; bucket?: SeriesBucket | undefined }) => !(q.period === "all" && q.bucket === "hour");
const HOUR_ALL_MESSAGE = "bucket=hour needs period today, week or month (period all is answered by day)";

export const costSeriesQuery = z
  .object({ period: z.enum(COST_PERIODS).default("today"), project, bucket })
  .refine(hourNeedsWindow, { message: HOUR_ALL_MESSAGE, path: ["bucket"] });
export const latencySeriesQuery = z.object({
  period: z.enum(LATENCY_PERIODS).default("today"),
  project,
  bucket,
  modality: z
    .enum(MODALITIES)
    .optional()
    .transform((v) => v ?? null),
});

/** hour for today and week, day for month and all: at most a few hundred points by default. */
export function defaultBucket(period: Period): SeriesBucket {
  return period === "today" || period === "week" ? "hour" : "day";
}

/** The answers' types are the schemas' (src/dashboard/schemas.ts). */
export type { CostPoint, CostSeries, LatencyPoint, LatencySeries } from "./schemas.js";

/** The buckets overlapping [now - period, now] (for `all`, from the first stored bucket). */
function bucketRange(period: Period, b: SeriesBucket, now: Date, first: number | null): number[] {
  const ms = b === "hour" ? HOUR_MS : DAY_MS;
  const end = Math.floor(now.getTime() / ms) * ms;
  const start = period === "all" ? (first ?? end) : Math.floor((now.getTime() - PERIOD_SECONDS[period] * 1000) / ms) * ms;
  const out: number[] = [];
  for (let t = Math.max(start, end - (SERIES_MAX_POINTS - 1) * ms); t <= end; t += ms) out.push(t);
  return out;
}

const tables = (b: SeriesBucket, allProjects: boolean) =>
  allProjects ? (b === "hour" ? requestModelRollups : requestModelRollupsDaily) : b === "hour" ? requestRollups : requestRollupsDaily;

interface RollupColumns {
  bucket: AnyPgColumn;
  tenantId: AnyPgColumn;
  project: AnyPgColumn;
}

function rollupWhere(t: RollupColumns, scope: ReportScope, from: number | null, extra: (SQL | undefined)[] = []): SQL | undefined {
  return and(
    from === null ? undefined : sql`${t.bucket} >= ${new Date(from).toISOString()}::timestamptz`,
    tenantCondition(t.tenantId, scope),
    scope.project === null ? undefined : sql`${t.project} = ${scope.project}`,
    ...extra,
  );
}

/**
 * Spend per hour or day bucket, read from the rollups only (whole buckets: the first one may start
 * before a rolling window does, so the series can sum to a little more than GET /api/costs). Every
 * bucket of the window is present, zero when nothing ran.
 */
export async function costSeries(db: Db, args: ReportScope & { period: Period; bucket: SeriesBucket; now?: Date }): Promise<CostSeries> {
  const now = args.now ?? new Date();
  const t = tables(args.bucket, false);
  const range = args.period === "all" ? null : bucketRange(args.period, args.bucket, now, null);
  const where = rollupWhere(t, args, range?.[0] ?? null);
  const rows = await queryRows<{ b: string | Date; cost: string; requests: string; errors: string }>(
    db,
    sql`SELECT ${t.bucket} AS b, sum(${t.costUsd})::text AS cost, sum(${t.requests})::bigint AS requests, sum(${t.errors})::bigint AS errors
      FROM ${t}${where ? sql` WHERE ${where}` : sql``} GROUP BY 1 ORDER BY 1`,
  );
  const byBucket = new Map(rows.map((r) => [new Date(r.b).getTime(), r]));
  const first = rows[0] ? new Date(rows[0].b).getTime() : null;
  const points = (range ?? bucketRange("all", args.bucket, now, first)).map((ms) => {
    const r = byBucket.get(ms);
    return { t: new Date(ms).toISOString(), cost: moneyNumber(r?.cost ?? 0), requests: Number(r?.requests ?? 0), errors: Number(r?.errors ?? 0) };
  });
  return { period: args.period, project: args.project, bucket: args.bucket, points };
}

/** A rollup row of a latency series: its bucket, its requests and its sketches (through the cache). */
interface SeriesRow extends SketchRow {
  b: string | Date;
  n: string | number;
}

/**
 * p50/p95 of TTFB and total latency per bucket, probe traffic excluded, from the rollups' mergeable
 * sketches (summarised by src/stats, the one percentile routine), optionally for one modality. The
 * rows' sketches come through the read cache (src/reports/sketch-cache.ts): summing a week of hour
 * sketches' buckets in SQL (jsonb_each per sketch) took ~250 ms at 10M requests a year.
 */
export async function latencySeries(
  db: Db,
  args: ReportScope & { period: Exclude<Period, "all">; bucket: SeriesBucket; modality: string | null; now?: Date; cache?: SketchCache },
): Promise<LatencySeries> {
  const now = args.now ?? new Date();
  const t = tables(args.bucket, args.project === null);
  const range = bucketRange(args.period, args.bucket, now, null);
  const where = rollupWhere(t, args, range[0] ?? null, [
    sql`${t.isProbe} = false`,
    args.modality === null ? undefined : sql`${t.modality} = ${args.modality}`,
  ]);
  const shape = JSON.stringify(["series", args.tenantId, args.project, args.period, args.bucket, args.modality]);
  const { rows, pairs } = await readSketchRows<SeriesRow>(
    db,
    args.cache ?? sketchCacheOf(db),
    shape,
    (known) => sql`SELECT r.b, r.n, r.v, k.kv IS NOT NULL AS cached, CASE WHEN k.kv IS NULL THEN r.th END AS th, CASE WHEN k.kv IS NULL THEN r.lh END AS lh
      FROM (SELECT ${t.bucket} AS b, ${t.requests} AS n, ${ROW_VERSION} AS v, ${t.ttfbHist} AS th, ${t.latencyHist} AS lh
        FROM ${t}${where ? sql` WHERE ${where}` : sql``}) r LEFT JOIN ${known} k ON k.kv = r.v`,
  );
  const parts = new Map<number, { n: number; ttfb: ParsedSketch[]; latency: ParsedSketch[] }>();
  for (const [i, r] of rows.entries()) {
    const ms = new Date(r.b).getTime();
    let e = parts.get(ms);
    if (!e) {
      e = { n: 0, ttfb: [], latency: [] };
      parts.set(ms, e);
    }
    e.n += Number(r.n);
    const pair = pairs[i];
    if (pair) {
      e.ttfb.push(pair.ttfb);
      e.latency.push(pair.latency);
    }
  }
  const sketches = new Map<number, { n: number; ttfb: LatencySketch; latency: LatencySketch }>();
  for (const [ms, e] of parts) sketches.set(ms, { n: e.n, ttfb: sketchOfParts(e.ttfb, []), latency: sketchOfParts(e.latency, []) });
  const points = range.map((ms) => {
    const e = sketches.get(ms);
    const tt = e && e.ttfb.count > 0 ? summarize(e.ttfb) : null;
    const ll = e && e.latency.count > 0 ? summarize(e.latency) : null;
    return {
      t: new Date(ms).toISOString(),
      requests: e?.n ?? 0,
      p50_ttfb_ms: tt?.p50 ?? null,
      p95_ttfb_ms: tt?.p95 ?? null,
      p50_total_latency_ms: ll?.p50 ?? null,
      p95_total_latency_ms: ll?.p95 ?? null,
    };
  });
  return { period: args.period, project: args.project, modality: args.modality, bucket: args.bucket, points };
}
