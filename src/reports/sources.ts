import { and, type SQL, sql } from "drizzle-orm";
import type { AnyPgColumn } from "drizzle-orm/pg-core";
import { type TenantScope, tenantCondition } from "../auth/context.js";
import { requestModelRollups, requestModelRollupsDaily, requestRollups, requestRollupsDaily, requests } from "../db/schema/index.js";
import type { RollupTable } from "../db/schema/request-rollups.js";
import { DAY_MS, floorTo } from "../rollups/buckets.js";
import type { ReportSegment, Segment } from "./window.js";

/** Who is asking and what they filter on; tenantId always comes from the key. */
export interface ReportScope extends TenantScope {
  project: string | null;
}

export interface SourceColumns {
  /** Select list over a rollup table (hour or day; both have the same columns); null: no rollup rows. */
  rollup: SQL | null;
  /** The same output columns computed from raw request rows; null: no raw rows. */
  raw: SQL | null;
}

/** A rollup table as a source: the four share one layout (one factory, src/db/schema/request-rollups.ts). */
const rollupSource = (t: RollupTable) => ({ table: t, time: t.bucket, tenant: t.tenantId, project: t.project, probe: t.isProbe });

const TABLES = {
  hour: rollupSource(requestRollups),
  day: rollupSource(requestRollupsDaily),
  hourAll: rollupSource(requestModelRollups),
  dayAll: rollupSource(requestModelRollupsDaily),
  raw: { table: requests, time: requests.ts, tenant: requests.tenantId, project: requests.project, probe: requests.isProbe },
} as const;

function rangeCondition(time: AnyPgColumn, seg: Omit<Segment, "source">): SQL | undefined {
  return and(
    seg.from ? sql`${time} >= ${seg.from.toISOString()}::timestamptz` : undefined,
    seg.toInclusive ? sql`${time} <= ${seg.to.toISOString()}::timestamptz` : sql`${time} < ${seg.to.toISOString()}::timestamptz`,
  );
}

/**
 * Whether a request row is dated after `seg.to` within its day: then the day's rollup rows hold rows
 * past the window and the `today` segment is read from raw rows. One index probe of the day's partition.
 */
function laterInDay(seg: ReportSegment): SQL {
  const dayEnd = new Date(floorTo(seg.to.getTime(), DAY_MS) + DAY_MS);
  return sql`EXISTS (SELECT 1 FROM ${requests} WHERE ${requests.ts} > ${seg.to.toISOString()}::timestamptz AND ${requests.ts} < ${dayEnd.toISOString()}::timestamptz)`;
}

/**
 * One UNION ALL over the window's segments, each from its source, all with the caller's tenant,
 * project and probe filters; null when no segment gives rows of the kinds asked for. A `today` segment
 * gives its day rollup rows, or (rows dated later that day) its raw rows: one of the two, decided in
 * the statement so both sides see the same snapshot. Every value is a bound parameter; filters never
 * become SQL text.
 */
export function segmentsUnion(
  segments: ReportSegment[],
  scope: ReportScope,
  cols: SourceColumns,
  opts: { excludeProbe?: boolean; allProjects?: boolean } = {},
): SQL | null {
  // The all-projects tables answer only queries without a project filter (their project is "*").
  const folded = opts.allProjects === true && scope.project === null;
  const part = (source: "raw" | "hour" | "day", seg: ReportSegment, gate?: SQL) => {
    const select = source === "raw" ? cols.raw : cols.rollup;
    if (select === null) return [];
    const t = TABLES[folded && source !== "raw" ? (source === "hour" ? "hourAll" : "dayAll") : source];
    const where = and(
      source === "day" && seg.source === "today" ? sql`${t.time} = ${seg.from?.toISOString()}::timestamptz` : rangeCondition(t.time, seg),
      tenantCondition(t.tenant, scope),
      scope.project === null ? undefined : sql`${t.project} = ${scope.project}`,
      opts.excludeProbe ? sql`${t.probe} = false` : undefined,
      gate,
    );
    return [sql`SELECT ${select} FROM ${t.table}${where ? sql` WHERE ${where}` : sql``}`];
  };
  const parts = segments.flatMap((seg) =>
    seg.source === "today" ? [...part("day", seg, sql`NOT ${laterInDay(seg)}`), ...part("raw", seg, laterInDay(seg))] : part(seg.source, seg),
  );
  return parts.length > 0 ? sql.join(parts, sql` UNION ALL `) : null;
}

/** The reports' raw queries run through the one raw-query helper (src/db/client.ts). */
export { queryRows } from "../db/client.js";
