import { execFile } from "node:child_process";
import { existsSync, mkdirSync } from "node:fs";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import type { PGlite } from "@electric-sql/pglite";
import type { SQL } from "drizzle-orm";
import type { PgDatabase, PgQueryResultHKT } from "drizzle-orm/pg-core";
import { drizzle as drizzlePg } from "drizzle-orm/node-postgres";
import pg from "pg";

/**
 * The Drizzle handle every query function takes; the same type over pg and PGlite. It has no
 * relational query API (`db.query.*`, unused here): given the schema, Drizzle builds a relational
 * query builder per table for every transaction it opens (and the walk of an ingested record ran
 * code in every module of src/db/schema/, test/platform/walk.test.ts).
 */
export type Db = PgDatabase<PgQueryResultHKT>;

/** Runs raw SQL and returns its rows (both drivers answer `{ rows }`). Values only ever as parameters. */
export async function queryRows<T>(db: Db, query: SQL): Promise<T[]> {
  return rowsOf<T>(await db.execute(query));
}

/** The rows of a raw driver result (pg and PGlite both answer `{ rows }`). */
export function rowsOf<T>(result: unknown): T[] {
  const rows = (result as { rows?: unknown }).rows;
  return Array.isArray(rows) ? (rows as T[]) : [];
}

export interface Database {
  db: Db;
  kind: "postgres" | "pglite";
  /** Where it lives, with any password masked: safe to log. */
  location: string;
  /** Runs fn on one dedicated connection (advisory locks need that). */
  withConnection<T>(fn: (db: Db) => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

/**
 * Where the read routes query: a read replica (DATABASE_READ_URL, opened by src/server.ts) or the
 * primary itself; src/compose.ts makes that one choice. Writes, and reads that write caches (the
 * fleet index's checkpoints), stay on the primary `database`.
 */
export interface ReadStore {
  readDatabase: Pick<Database, "db">;
}

export type DatabaseTarget = { url: string } | { path: string };

export const DEFAULT_DB_PATH = "./.voxgate/db";

/**
 * The embedded database serves one process on a laptop: 16 MB of shared buffers instead of
 * Postgres's 128 MB default cuts idle RSS by ~120 MB without hurting a single-user workload.
 */
const PGLITE_OPTIONS = { postgresqlconf: ["shared_buffers = 16MB"] };

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
    const pool = new pg.Pool({
      connectionString: target.url,
      max: 10,
      connectionTimeoutMillis: 5000,
      // JIT off for the session, before the connection serves a query. Voxgate's statements are short,
      // and many are cached generic plans whose estimates grow with the tables (100 rows per JSON
      // array, every day partition): past jit_above_cost (100,000 by default) Postgres compiled the
      // OTLP receiver's on every execution, ~80 ms against ~5 ms of work (docs/perf/ingest.md, "JIT").
      // A SET, not the `options` startup parameter, which PgBouncer refuses.
      onConnect: async (client) => {
        await client.query("SET jit = off").catch(() => {});
      },
    });
    // A dropped connection (Postgres restart) must not crash the process; queries fail and retry later.
    pool.on("error", () => {});
    // A client checked out between two statements of a transaction gets the same error on itself;
    // unhandled, it would kill the process. The running query still fails (and the route answers 503).
    pool.on("connect", (client) => client.on("error", () => {}));
    const db = drizzlePg(pool, { casing: "snake_case" }) as unknown as Db;
    return {
      db,
      kind: "postgres",
      location: maskUrl(target.url),
      async withConnection(fn) {
        const client = await pool.connect();
        try {
          return await fn(drizzlePg(client, { casing: "snake_case" }) as unknown as Db);
        } finally {
          client.release();
        }
      },
      close: () => pool.end(),
    };
  }
  const dir = resolve(target.path);
  mkdirSync(dir, { recursive: true });
  if (!existsSync(join(dir, "PG_VERSION"))) await initPgliteDir(dir);
  return pgliteDatabase(dir, dir);
}

/**
 * PGlite and its Drizzle driver are imported when a PGlite store is opened: a process on Postgres
 * never loads them (startup time and idle memory, docs/perf/startup.md).
 */
async function pgliteDatabase(dataDir: string | undefined, location: string): Promise<Database> {
  const [{ PGlite }, { drizzle }] = await Promise.all([import("@electric-sql/pglite"), import("drizzle-orm/pglite")]);
  const client: PGlite = dataDir === undefined ? new PGlite(PGLITE_OPTIONS) : new PGlite(dataDir, PGLITE_OPTIONS);
  await client.waitReady;
  const db = drizzle(client, { casing: "snake_case" }) as unknown as Db;
  return { db, kind: "pglite", location, withConnection: (fn) => fn(db), close: () => client.close() };
}

/**
 * Creates a new PGlite data directory in a short-lived child process: initdb grows the WASM heap
 * to ~700 MB, which a long-running server would otherwise keep for its whole life.
 */
async function initPgliteDir(dir: string): Promise<void> {
  const script = `const { PGlite } = await import(${JSON.stringify(import.meta.resolve("@electric-sql/pglite"))});
const db = new PGlite(${JSON.stringify(dir)}, ${JSON.stringify(PGLITE_OPTIONS)});
await db.waitReady; await db.close();`;
  await promisify(execFile)(process.execPath, ["--input-type=module", "-e", script]);
}

/** An in-memory PGlite (tests, benchmarks). */
export function openMemoryDatabase(): Promise<Database> {
  return pgliteDatabase(undefined, "memory");
}
