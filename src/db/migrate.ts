import { join } from "node:path";
import { sql } from "drizzle-orm";
import { migrate as migratePg } from "drizzle-orm/node-postgres/migrator";
import type { NodePgDatabase } from "drizzle-orm/node-postgres";
import type { PgliteDatabase } from "drizzle-orm/pglite";
import type { Database } from "./client.js";
import { aheadWindow, ensureDayPartitions } from "./partitions.js";
import { PACKAGE_ROOT } from "../version.js";

export const MIGRATIONS_FOLDER = join(PACKAGE_ROOT, "migrations");

/** Arbitrary constant: every Voxgate replica takes this advisory lock while migrating. */
const MIGRATION_LOCK_KEY = 0x766f7867; // "voxg"

/**
 * Applies pending migrations, then creates the day partitions of yesterday .. a few days ahead (the
 * start-up maintenance step; retention runs repeat it): on Postgres under an advisory lock so replicas
 * can start together.
 */
export async function runMigrations(database: Database, folder: string = MIGRATIONS_FOLDER): Promise<void> {
  const w = aheadWindow();
  if (database.kind === "pglite") {
    // Imported here, as the driver is (src/db/client.ts): a process on Postgres never loads PGlite's side.
    const { migrate: migratePglite } = await import("drizzle-orm/pglite/migrator");
    await migratePglite(database.db as unknown as PgliteDatabase, { migrationsFolder: folder });
    await ensureDayPartitions(database.db, w.from, w.to);
    return;
  }
  await database.withConnection(async (db) => {
    await db.execute(sql`select pg_advisory_lock(${MIGRATION_LOCK_KEY})`);
    try {
      await migratePg(db as unknown as NodePgDatabase, { migrationsFolder: folder });
      await ensureDayPartitions(db, w.from, w.to);
    } finally {
      await db.execute(sql`select pg_advisory_unlock(${MIGRATION_LOCK_KEY})`);
    }
  });
}
