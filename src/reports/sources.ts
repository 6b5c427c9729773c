import { and, type SQL, sql } from "drizzle-orm";
import type { AnyPgColumn } from "drizzle-orm/pg-core";
import { type TenantScope, tenantCondition } from "../auth/context.js";
import type { Db } from "../db/client.js";
import { requestModelRollups, requestModelRollupsDaily, requestRollups, requestRollupsDaily, requests } from "../db/schema/index.js";
import type { RollupTable } from "../db/schema/request-rollups.js";
import type { Segment } from "./window.js";

/** Who is asking and what they filter on; tenantId always comes from the key. */
export interface ReportScope extends TenantScope {
  project: string | null;
}

export interface SourceColumns {
  /** Select list over a rollup table (hour or day; both have the same columns). */
  rollup: SQL;
  /** The same output columns computed from raw request rows. */
  raw: SQL;
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

function rangeCondition(time: AnyPgColumn, seg: Segment): SQL | undefined {
  return and(
    seg.from ? sql`${time} >= ${seg.from.toISOString()}::timestamptz` : undefined,
    seg.to ? (seg.toInclusive ? sql`${time} <= ${seg.to.toISOString()}::timestamptz` : sql`${time} < ${seg.to.toISOString()}::timestamptz`) : undefined,
  );
}

/**
 * One UNION ALL over the window's segments, each from its source, all with the caller's tenant,
 * project and probe filters. Every value is a bound parameter; filters never become SQL text.
 */
export function segmentsUnion(
  segments: Segment[],
  scope: ReportScope,
  cols: SourceColumns,
  opts: { excludeProbe?: boolean; allProjects?: boolean } = {},
): SQL {
  // The all-projects tables answer only queries without a project filter (their project is "*").
  const folded = opts.allProjects === true && scope.project === null;
  const parts = segments.map((seg) => {
    const t = TABLES[folded && seg.source !== "raw" ? (seg.source === "hour" ? "hourAll" : "dayAll") : seg.source];
    const where = and(
      rangeCondition(t.time, seg),
      tenantCondition(t.tenant, scope),
      scope.project === null ? undefined : sql`${t.project} = ${scope.project}`,
      opts.excludeProbe ? sql`${t.probe} = false` : undefined,
    );
    const select = seg.source === "raw" ? cols.raw : cols.rollup;
    return sql`SELECT ${select} FROM ${t.table}${where ? sql` WHERE ${where}` : sql``}`;
  });
  return sql.join(parts, sql` UNION ALL `);
}

/** Rows of a raw SQL query; node-postgres and PGlite both answer with `{ rows }`. */
export async function queryRows<T>(db: Db, query: SQL): Promise<T[]> {
  const result = (await db.execute(query)) as unknown as { rows: T[] };
  return result.rows;
}
