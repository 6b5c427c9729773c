import { mkdirSync } from "node:fs";
import { resolve } from "node:path";
import { PGlite } from "@electric-sql/pglite";
import type { PgDatabase, PgQueryResultHKT } from "drizzle-orm/pg-core";
import { drizzle as drizzlePg } from "drizzle-orm/node-postgres";
import { drizzle as drizzlePglite } from "drizzle-orm/pglite";
import pg from "pg";
import * as schema from "./schema/index.js";

/** The Drizzle handle every query function takes; the same type over pg and PGlite. */
export type Db = PgDatabase<PgQueryResultHKT, typeof schema>;

export interface Database {
  db: Db;
  kind: "postgres" | "pglite";
  /** Where it lives, with any password masked: safe to log. */
  location: string;
  /** Runs fn on one dedicated connection (advisory locks need that). */
  withConnection<T>(fn: (db: Db) => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

export type DatabaseTarget = { url: string } | { path: string };

export const DEFAULT_DB_PATH = "./.voxgate/db";

export function maskUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = "***";
    return u.toString();
  } catch {
    return "(unparseable database url)";
  }
}

export async function openDatabase(target: DatabaseTarget): Promise<Database> {
  if ("url" in target) {
    const pool = new pg.Pool({ connectionString: target.url, max: 10, connectionTimeoutMillis: 5000 });
    // A dropped connection (Postgres restart) must not crash the process; queries fail and retry later.
    pool.on("error", () => {});
    // A client checked out between two statements of a transaction gets the same error on itself;
    // unhandled, it would kill the process. The running query still fails (and the route answers 503).
    pool.on("connect", (client) => client.on("error", () => {}));
    const db = drizzlePg(pool, { schema, casing: "snake_case" }) as unknown as Db;
    return {
      db,
      kind: "postgres",
      location: maskUrl(target.url),
      async withConnection(fn) {
        const client = await pool.connect();
        try {
          return await fn(drizzlePg(client, { schema, casing: "snake_case" }) as unknown as Db);
        } finally {
          client.release();
        }
      },
      close: () => pool.end(),
    };
  }
  const dir = resolve(target.path);
  if (dir !== "memory://") mkdirSync(dir, { recursive: true });
  const client = new PGlite(dir);
  await client.waitReady;
  const db = drizzlePglite(client, { schema, casing: "snake_case" }) as unknown as Db;
  return {
    db,
    kind: "pglite",
    location: dir,
    withConnection: (fn) => fn(db),
    close: () => client.close(),
  };
}

/** An in-memory PGlite (tests, benchmarks). */
export async function openMemoryDatabase(): Promise<Database> {
  const client = new PGlite();
  await client.waitReady;
  const db = drizzlePglite(client, { schema, casing: "snake_case" }) as unknown as Db;
  return { db, kind: "pglite", location: "memory", withConnection: (fn) => fn(db), close: () => client.close() };
}
