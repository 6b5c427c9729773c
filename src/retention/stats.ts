import { sql } from "drizzle-orm";
import { type Db, queryRows } from "../db/client.js";
import { listDayPartitions } from "../db/partitions.js";
import { RAW_TABLES } from "./tables.js";

export interface RetentionStats {
  tables: { table: string; rows: number; bytes: number }[];
  /** Per day-partitioned table, the UTC day its oldest day partition starts (tables with one). */
  oldestPartitions: { table: string; day: Date }[];
  /** The oldest request row kept (null: none). */
  oldestRequest: Date | null;
  lastRun: { finishedAt: Date; durationMs: number; deleted: number } | null;
}

/**
 * Sizes of the raw tables for /v1/metrics: bytes are pg_total_relation_size (heap, indexes, TOAST),
 * rows the planner's estimate (counted only for a partition never analyzed: an empty day ahead, or a young one), both
 * summed over a partitioned table's partitions (pg_partition_tree; a plain table is its own tree), so
 * a scrape stays cheap at any size. The oldest request is one index probe per partition (requests_ts_idx).
 */
export async function retentionStats(db: Db): Promise<RetentionStats> {
  const [sizes, lastRun] = await Promise.all([tableSizes(db), lastRetentionRun(db)]);
  return { ...sizes, lastRun };
}

export type TableSizes = Omit<RetentionStats, "lastRun">;

/** Rows, bytes and oldest rows of the raw tables: catalog work per partition (a year of days is ~1,850 leaves). */
export async function tableSizes(db: Db): Promise<TableSizes> {
  const names = sql.join(RAW_TABLES.map((t) => sql`(${t})`), sql`, `);
  const [tables, oldest, partitions] = await Promise.all([
    queryRows<{ table: string; rows: string; bytes: string; never: string[] | null }>(
      db,
      sql`SELECT t.name AS table, sum(pg_total_relation_size(c.oid))::text AS bytes,
          sum(greatest(c.reltuples, 0))::bigint::text AS rows,
          array_agg(c.oid::regclass::text) FILTER (WHERE c.reltuples < 0) AS never
        FROM (VALUES ${names}) AS t(name), pg_partition_tree(t.name::regclass) pt JOIN pg_class c ON c.oid = pt.relid
        WHERE pt.isleaf GROUP BY t.name ORDER BY t.name`,
    ),
    queryRows<{ ts: Date | string | null }>(db, sql`SELECT min(ts) AS ts FROM requests`),
    listDayPartitions(db),
  ]);
  const oldestPartitions = new Map<string, number>();
  for (const p of partitions) {
    if (p.dayMs !== null && !oldestPartitions.has(p.table)) oldestPartitions.set(p.table, p.dayMs);
  }
  const out: RetentionStats["tables"] = [];
  for (const t of tables) {
    let rows = Number(t.rows);
    // Only the leaves never analyzed are counted (day partitions created ahead, still empty, which
    // autovacuum never analyzes; or today's before its first analyze), never the whole table.
    const never = t.never ?? [];
    if (never.length > 0) {
      const counts = sql.join(
        never.map((leaf) => sql`(SELECT count(*) FROM ${sql.raw(leaf)})`),
        sql` + `,
      );
      const [c] = await queryRows<{ n: string }>(db, sql`SELECT (${counts})::text AS n`);
      rows += Number(c?.n ?? 0);
    }
    out.push({ table: t.table, rows, bytes: Number(t.bytes) });
  }
  return {
    tables: out,
    oldestPartitions: [...oldestPartitions].sort(([a], [b]) => a.localeCompare(b)).map(([table, day]) => ({ table, day: new Date(day) })),
    oldestRequest: oldest[0]?.ts ? new Date(oldest[0].ts) : null,
  };
}

/** The newest retention run (null before the first): one row, read live at every scrape. */
export async function lastRetentionRun(db: Db): Promise<RetentionStats["lastRun"]> {
  const [run] = await queryRows<{ finished_at: Date | string; duration_ms: number; deleted: { tables?: Record<string, number>; projects?: Record<string, Record<string, number>> } }>(
    db,
    sql`SELECT finished_at, duration_ms, deleted FROM retention_runs ORDER BY id DESC LIMIT 1`,
  );
  if (!run) return null;
  const sum = (o: Record<string, number> | undefined) => Object.values(o ?? {}).reduce((a, n) => a + n, 0);
  return {
    finishedAt: new Date(run.finished_at),
    durationMs: Number(run.duration_ms),
    deleted: sum(run.deleted.tables) + Object.values(run.deleted.projects ?? {}).reduce((a, p) => a + sum(p), 0),
  };
}

/**
 * tableSizes for /v1/metrics, computed at most once per `maxAgeMs`: past its age a scrape is answered
 * with the previous figures while one refresh runs behind it, so no scrape waits on the catalog walk
 * except the first. Sizes move by the day (partitions) and the minute (rows): a minute old is fine.
 */
export function cachedTableSizes(db: Db, maxAgeMs = 60_000, clock: () => number = Date.now): () => Promise<TableSizes> {
  let last: { at: number; value: TableSizes } | null = null;
  let pending: Promise<TableSizes> | null = null;
  const refresh = () => {
    pending ??= tableSizes(db)
      .then((value) => {
        last = { at: clock(), value };
        return value;
      })
      .finally(() => {
        pending = null;
      });
    return pending;
  };
  return async () => {
    if (last === null) return refresh();
    if (clock() - last.at >= maxAgeMs) refresh().catch(() => undefined);
    return last.value;
  };
}
