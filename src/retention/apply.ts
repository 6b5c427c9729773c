import { sql } from "drizzle-orm";
import { type Database, type Db, queryRows } from "../db/client.js";
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
  deleted: Record<string, number>;
  projects: Record<string, Record<string, number>>;
  total_deleted: number;
  aborted: boolean;
}

/**
 * Applies the horizons: rows past them are deleted in bounded batches (`DELETE … WHERE ctid = ANY
 * (ARRAY(SELECT ctid … LIMIT n))`, a TID scan, one short transaction each), table by table in
 * RETENTION_TABLES order, then each project's shorter horizon. One replica at a time: the run holds
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
    projects: {},
    total_deleted: 0,
    aborted: false,
  };
  return database.withConnection(async (conn) => {
    const [lock] = await queryRows<{ ok: boolean }>(conn, sql`SELECT pg_try_advisory_lock(${RETENTION_LOCK_KEY}) AS ok`);
    if (!lock?.ok) return result;
    try {
      result.ran = true;
      await recordHorizons(conn, h);
      const batch = Math.max(1, o.batchRows ?? DEFAULT_BATCH_ROWS);
      for (const t of RETENTION_TABLES) {
        const before = h.byClass[t.class];
        if (before !== null) {
          const n = await deleteInBatches(conn, t.table, sql`${t.older(before)}`, batch, "*", o);
          result.deleted[t.table] = n;
          result.total_deleted += n;
        }
        if (t.class !== "raw") continue;
        for (const p of h.projects) {
          const cond = projectCondition(t.table, p.project);
          if (cond === null) continue;
          const n = await deleteInBatches(conn, t.table, sql`${t.older(p.before)} AND ${cond}`, batch, p.project, o);
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
        VALUES (${result.started_at}::timestamptz, now(), ${result.duration_ms}, ${JSON.stringify({ tables: result.deleted, projects: result.projects, aborted: result.aborted })}::jsonb)`);
      return result;
    } finally {
      await conn.execute(sql`SELECT pg_advisory_unlock(${RETENTION_LOCK_KEY})`);
    }
  });
}

async function deleteInBatches(
  conn: Db,
  table: string,
  where: ReturnType<typeof sql>,
  batch: number,
  scope: string,
  o: RetentionRunOptions,
): Promise<number> {
  const t = sql.raw(table);
  let total = 0;
  for (;;) {
    if (o.signal?.aborted) return total;
    const [row] = await queryRows<{ n: number }>(
      conn,
      sql`WITH d AS (DELETE FROM ${t} WHERE ctid = ANY(ARRAY(SELECT ctid FROM ${t} WHERE ${where} LIMIT ${batch})) RETURNING 1)
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
