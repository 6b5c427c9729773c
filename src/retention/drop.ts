import { sql } from "drizzle-orm";
import { type Db, queryRows } from "../db/client.js";
import type { DayPartition } from "../db/partitions.js";

const DAY_MS = 86_400_000;

/**
 * How long a detach may wait for the parent's lock before giving way. Postgres refuses DETACH …
 * CONCURRENTLY on a table with a DEFAULT partition (ours all have one, so a write never fails), so
 * the detach is the plain one: its ACCESS EXCLUSIVE lock on the parent is held only for the catalog
 * change, but while it waits for in-flight writes, new writes queue behind it. A short lock timeout,
 * retried after a pause, bounds what an ingest batch can wait for it.
 */
export const DETACH_LOCK_TIMEOUT_MS = 50;
const DETACH_ATTEMPTS = 40;
const DETACH_PAUSE_MS = 100;

export interface DroppedPartition {
  partition: string;
  day: string;
  rows: number;
  /** Detach attempts made (each waited at most DETACH_LOCK_TIMEOUT_MS for the parent's lock). */
  attempts: number;
  /** From the first detach attempt to the partition dropped (the count before it excluded). */
  ms: number;
}

/** The day partitions of `table` wholly before `cutoff` (a UTC midnight): what drops whole. */
export function partitionsBefore(all: readonly DayPartition[], table: string, cutoff: Date): DayPartition[] {
  return all.filter((p) => p.table === table && p.dayMs !== null && p.dayMs + DAY_MS <= cutoff.getTime());
}

/**
 * Detaches one partition from its parent (plain DETACH under DETACH_LOCK_TIMEOUT_MS, retried), then
 * drops it; its rows are counted first, on the partition alone. Returns null when the lock stayed busy
 * through every attempt (the next run tries again) or the partition is already gone.
 */
export async function dropPartition(conn: Db, p: DayPartition, signal?: AbortSignal): Promise<DroppedPartition | null> {
  const name = sql.raw(`"${p.name}"`);
  const [c] = await queryRows<{ n: string }>(conn, sql`SELECT count(*)::text AS n FROM ${name}`);
  const t0 = performance.now();
  for (let attempt = 0; attempt < DETACH_ATTEMPTS; attempt++) {
    if (signal?.aborted) return null;
    try {
      await conn.transaction(async (tx) => {
        await tx.execute(sql.raw(`SET LOCAL lock_timeout = ${DETACH_LOCK_TIMEOUT_MS}`));
        await tx.execute(sql.raw(`ALTER TABLE "${p.table}" DETACH PARTITION "${p.name}"`));
      });
      await conn.execute(sql.raw(`DROP TABLE IF EXISTS "${p.name}"`));
      const day = new Date(p.dayMs ?? 0).toISOString().slice(0, 10);
      return { partition: p.name, day, rows: Number(c?.n ?? 0), attempts: attempt + 1, ms: Math.round(performance.now() - t0) };
    } catch (err) {
      if (!isLockTimeout(err)) throw err;
      await new Promise((r) => setTimeout(r, DETACH_PAUSE_MS));
    }
  }
  return null;
}

function isLockTimeout(err: unknown): boolean {
  for (let e: unknown = err; e && typeof e === "object"; e = (e as { cause?: unknown }).cause) {
    if ((e as { code?: string }).code === "55P03") return true;
  }
  return false;
}
