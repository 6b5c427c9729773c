import type { SQL } from "drizzle-orm";
import type { Db } from "../db/client.js";

/** Runs raw SQL and returns its rows; the same over node-postgres and PGlite. */
export async function queryRows<T>(db: Db, query: SQL): Promise<T[]> {
  const result = (await db.execute(query)) as unknown as { rows?: T[] };
  return result.rows ?? [];
}

/** The SQLSTATE of a database error, looking through Drizzle's wrapper. */
export function sqlState(err: unknown): string | undefined {
  for (let e: unknown = err, i = 0; e && typeof e === "object" && i < 5; e = (e as { cause?: unknown }).cause, i++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === "string" && /^[0-9A-Z]{5}$/.test(code)) return code;
  }
  return undefined;
}

/** Deadlock or serialization failure: the whole transaction may simply be run again. */
export function isRetryable(err: unknown): boolean {
  const code = sqlState(err);
  return code === "40P01" || code === "40001";
}

/** Runs a transaction, re-running it a few times on deadlock/serialization failure. */
export async function withRetry<T>(fn: () => Promise<T>, attempts = 4): Promise<T> {
  for (let i = 1; ; i++) {
    try {
      return await fn();
    } catch (err) {
      if (i >= attempts || !isRetryable(err)) throw err;
      await new Promise((r) => setTimeout(r, 10 * i + Math.random() * 20));
    }
  }
}
