import { sql } from "drizzle-orm";
import { type Database, type Db, queryRows } from "../db/client.js";
import { aheadWindow, type DayPartition, ensureDayPartitions, listDayPartitions, PARTITIONED_TABLES } from "../db/partitions.js";
import { type DroppedPartition, dropPartition, partitionsBefore } from "./drop.js";
import type { RetentionHorizons } from "./horizons.js";
import { projectCondition, RETENTION_TABLES } from "./tables.js";

/** Arbitrary constant: the replica holding this advisory lock is the one applying retention. */
export const RETENTION_LOCK_KEY = 0x766f7872; // "voxr"

/** Rows removed per statement: each batch is its own short transaction, so writers never wait longer. */
export const DEFAULT_BATCH_ROWS = 5000;

export interface RetentionProgress {
  table: string;
  /** `*` for the global horizon of the table's class, else the project. */
  scope: string;
  deleted: number;
}

export interface RetentionRunOptions {
  batchRows?: number;
  /** Called after every batch (the CLI's progress bar; tests write between batches). */
  onBatch?: (p: RetentionProgress) => Promise<void> | void;
  /** Stops between batches (server shutdown). */
  signal?: AbortSignal;
}

export interface RetentionRunResult {
  /** false: another replica holds the lock; nothing was done. */
  ran: boolean;
  started_at: string;
  duration_ms: number;
  /** Rows removed per table: in dropped partitions and by batched deletes. */
  deleted: Record<string, number>;
  /** Day partitions dropped whole, per table. */
  dropped: Record<string, DroppedPartition[]>;
  projects: Record<string, Record<string, number>>;
  total_deleted: number;
  aborted: boolean;
}

/**
 * Applies the horizons, table by table in RETENTION_TABLES order. A day-partitioned table's days wholly
 * past the global horizon are detached and dropped whole (src/retention/drop.ts); its rows past it in
 * the DEFAULT partition, every other table's rows past theirs, and each project's rows past a shorter
 * horizon are deleted in bounded batches (`DELETE … WHERE ctid = ANY (ARRAY(SELECT ctid … LIMIT n))`,
 * a TID scan, one short transaction each), partition by partition: a ctid names a row of one table
 * only, never of a partitioned parent. One replica at a time: the run holds
 * a session advisory lock on a connection of its own and is skipped (ran: false) when another holds
 * it. The horizons reached are stored first (retention_horizons), so re-rating refuses windows that
 * may have lost rows even if the run is interrupted.
 */
export async function applyRetention(database: Database, h: RetentionHorizons, o: RetentionRunOptions = {}): Promise<RetentionRunResult> {
  const started = Date.now();
  const result: RetentionRunResult = {
    ran: false,
    started_at: new Date(started).toISOString(),
    duration_ms: 0,
    deleted: {},
    dropped: {},
    projects: {},
    total_deleted: 0,
    aborted: false,
  };
  return database.withConnection(async (conn) => {
    const [lock] = await queryRows<{ ok: boolean }>(conn, sql`SELECT pg_try_advisory_lock(${RETENTION_LOCK_KEY}) AS ok`);
    if (!lock?.ok) return result;
    try {
      result.ran = true;
      // The maintenance step: the coming days' partitions, so writes keep landing in day partitions.
      const w = aheadWindow(h.now);
      await ensureDayPartitions(conn, w.from, w.to);
      await recordHorizons(conn, h);
      const batch = Math.max(1, o.batchRows ?? DEFAULT_BATCH_ROWS);
      let parts = await listDayPartitions(conn);
      for (const t of RETENTION_TABLES) {
        const before = h.byClass[t.class];
        const partitioned = PARTITIONED_TABLES.some((p) => p.table === t.table);
        if (before !== null) {
          let n = 0;
          if (partitioned) {
            for (const p of partitionsBefore(parts, t.table, before)) {
              const d = await dropPartition(conn, p, o.signal);
              if (d === null) continue;
              parts = parts.filter((x) => x.name !== p.name);
              result.dropped[t.table] = [...(result.dropped[t.table] ?? []), d];
              n += d.rows;
              await o.onBatch?.({ table: t.table, scope: "*", deleted: d.rows });
            }
          }
          // Day partitions (kept ones start at or after the horizon, a UTC midnight) need no delete.
          for (const leaf of partitioned ? [`${t.table}_default`] : [t.table]) {
            n += await deleteInBatches(conn, t.table, sql`${t.older(before)}`, batch, "*", o, leaf);
          }
          result.deleted[t.table] = n;
          result.total_deleted += n;
        }
        if (t.class !== "raw") continue;
        for (const p of h.projects) {
          const leaves = partitioned ? leavesBefore(parts, t.table, p.before) : [t.table];
          let n = 0;
          for (const leaf of leaves) {
            const cond = projectCondition(t.table, p.project, leaf);
            if (cond === null) break;
            n += await deleteInBatches(conn, t.table, sql`${t.older(p.before)} AND ${cond}`, batch, p.project, o, leaf);
          }
          if (projectCondition(t.table, p.project) === null) continue;
          const per = result.projects[p.project] ?? {};
          per[t.table] = n;
          result.projects[p.project] = per;
          result.total_deleted += n;
        }
        if (o.signal?.aborted) break;
      }
      result.aborted = o.signal?.aborted === true;
      result.duration_ms = Date.now() - started;
      await conn.execute(sql`INSERT INTO retention_runs (started_at, finished_at, duration_ms, deleted)
        VALUES (${result.started_at}::timestamptz, now(), ${result.duration_ms},
                ${JSON.stringify({ tables: result.deleted, dropped: result.dropped, projects: result.projects, aborted: result.aborted })}::jsonb)`);
      return result;
    } finally {
      await conn.execute(sql`SELECT pg_advisory_unlock(${RETENTION_LOCK_KEY})`);
    }
  });
}

/** The default partition and the day partitions starting before `before`: where a project's older rows are. */
function leavesBefore(parts: readonly DayPartition[], table: string, before: Date): string[] {
  return parts.filter((p) => p.table === table && (p.dayMs === null || p.dayMs < before.getTime())).map((p) => p.name);
}

/**
 * A CTE after `d` (deleted sessions): their counts per UTC day of start and agent, added to
 * fleet_index_agent_retired_sessions in the deleting statement, so a span's session count (what is
 * left plus what was retired: src/fleet/page-counts.ts) is the same before, during and after the
 * delete, and a span count cached before it stays valid. Agent order: the lock order of its rows.
 */
const RETIRE_SESSIONS = sql`, r AS (
  INSERT INTO fleet_index_agent_retired_sessions AS x (day, tenant_id, agent_id, sessions)
  SELECT date_trunc('day', started_at, 'UTC'), tenant_id, agent_id, count(*) FROM d WHERE agent_id IS NOT NULL
   GROUP BY 1, 2, 3 ORDER BY 3, 2 NULLS FIRST, 1
  ON CONFLICT (agent_id, tenant_id, day) DO UPDATE SET sessions = x.sessions + excluded.sessions)`;

/** Deletes `where` rows of `leaf` (a plain table: the table itself or one partition) in batches; progress names `table`. */
async function deleteInBatches(
  conn: Db,
  table: string,
  where: ReturnType<typeof sql>,
  batch: number,
  scope: string,
  o: RetentionRunOptions,
  leaf: string,
): Promise<number> {
  const t = sql.raw(`"${leaf}"`);
  const sessions = table === "sessions";
  let total = 0;
  for (;;) {
    if (o.signal?.aborted) return total;
    const [row] = await queryRows<{ n: number }>(
      conn,
      sql`WITH d AS (DELETE FROM ${t} WHERE ctid = ANY(ARRAY(SELECT ctid FROM ${t} WHERE ${where} LIMIT ${batch}))
                     RETURNING ${sessions ? sql`tenant_id, agent_id, started_at` : sql`1`})${sessions ? RETIRE_SESSIONS : sql``}
          SELECT count(*)::int AS n FROM d`,
    );
    const n = Number(row?.n ?? 0);
    total += n;
    if (n > 0) await o.onBatch?.({ table, scope, deleted: n });
    if (n < batch) return total;
  }
}

/** Raises each scope's stored horizon to this run's (never lowers it: rows once removed stay removed). */
async function recordHorizons(conn: Db, h: RetentionHorizons): Promise<void> {
  const scopes = [...(h.byClass.raw ? [{ scope: "*", before: h.byClass.raw }] : []), ...h.projects.map((p) => ({ scope: p.project, before: p.before }))];
  for (const s of scopes) {
    await conn.execute(sql`INSERT INTO retention_horizons (scope, before) VALUES (${s.scope}, ${s.before.toISOString()}::timestamptz)
      ON CONFLICT (scope) DO UPDATE SET before = greatest(retention_horizons.before, excluded.before), updated_at = now()`);
  }
}

/**
 * The latest horizon before which raw rows may be gone, for a window [from, …): null when none
 * reaches into it. Re-rating refuses such a window (it could only re-rate what is left).
 */
export async function rawHorizonWithin(db: Db, from: Date): Promise<{ scope: string; before: Date } | null> {
  const [row] = await queryRows<{ scope: string; before: Date | string }>(
    db,
    sql`SELECT scope, before FROM retention_horizons WHERE before > ${from.toISOString()}::timestamptz ORDER BY scope = '*' DESC, before DESC, scope LIMIT 1`,
  );
  return row ? { scope: row.scope, before: new Date(row.before) } : null;
}
