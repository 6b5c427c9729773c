import { randomBytes } from "node:crypto";
import { type SQL, sql } from "drizzle-orm";
import pg from "pg";
import { inject } from "vitest";
import { type Database, type Db, openDatabase, openMemoryDatabase } from "../../src/db/client.js";
import { runMigrations } from "../../src/db/migrate.js";

export interface TestDatabase {
  database: Database;
  /** The Postgres URL of this database (null on PGlite): for spawning a real `voxgate serve`. */
  url: string | null;
  drop(): Promise<void>;
}

/** A fresh, migrated database of its own for one test file (a Postgres clone of the template, or PGlite). */
export async function createTestDatabase(): Promise<TestDatabase> {
  if (inject("dbBackend") === "pglite") {
    const database = await openMemoryDatabase();
    await runMigrations(database);
    return { database, url: null, drop: () => database.close() };
  }
  const adminUrl = inject("pgAdminUrl");
  const name = `${inject("pgRunPrefix")}${randomBytes(4).toString("hex")}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    for (let attempt = 0; ; attempt++) {
      try {
        await admin.query(`CREATE DATABASE ${name} TEMPLATE ${inject("pgTemplate")}`);
        break;
      } catch (err) {
        // Two clones of one template at the same instant can collide; retry briefly.
        if (attempt >= 10) throw err;
        await new Promise((r) => setTimeout(r, 100 + Math.random() * 200));
      }
    }
  } finally {
    await admin.end();
  }
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  const database = await openDatabase({ url: url.toString() });
  return {
    database,
    url: url.toString(),
    async drop() {
      await database.close();
      const a = new pg.Client({ connectionString: adminUrl });
      await a.connect();
      await a.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).catch(() => {});
      await a.end();
    },
  };
}

/**
 * The plan of `stmt` (EXPLAIN, costs off) under planner settings that last for this one transaction
 * (`SET LOCAL`), as text: for tests that pin a plan's shape. EXPLAIN without ANALYZE runs nothing.
 */
export async function planWith(db: Db, settings: readonly string[], stmt: SQL): Promise<string> {
  return db.transaction(async (tx) => {
    for (const s of settings) await tx.execute(sql.raw(`SET LOCAL ${s}`));
    const res = (await tx.execute(sql`EXPLAIN (COSTS OFF) ${stmt}`)) as unknown as { rows: Record<string, string>[] };
    return res.rows.map((r) => Object.values(r).join("")).join("\n");
  });
}
