import { randomBytes } from "node:crypto";
import { sql } from "drizzle-orm";
import pg from "pg";
import { describe, expect, inject, it } from "vitest";
import { openDatabase, queryRows } from "../../src/db/client.js";
import { runMigrations } from "../../src/db/migrate.js";

describe("migrations", () => {
  it.skipIf(inject("dbBackend") !== "postgres")("two replicas migrating an empty database at once both succeed", async () => {
    const adminUrl = inject("pgAdminUrl");
    const name = `${inject("pgRunPrefix")}mig_${randomBytes(4).toString("hex")}`;
    const admin = new pg.Client({ connectionString: adminUrl });
    await admin.connect();
    await admin.query(`CREATE DATABASE ${name}`);
    const url = new URL(adminUrl);
    url.pathname = `/${name}`;
    const a = await openDatabase({ url: url.toString() });
    const b = await openDatabase({ url: url.toString() });
    try {
      await Promise.all([runMigrations(a), runMigrations(b), runMigrations(a)]);
      const applied = await queryRows<{ n: number }>(a.db, sql`select count(*)::int as n from drizzle.__drizzle_migrations`);
      expect(applied[0]?.n).toBeGreaterThan(0);
      const tables = await queryRows<{ n: number }>(a.db, sql`select count(*)::int as n from pg_tables where tablename = 'requests'`);
      expect(tables[0]?.n).toBe(1);
    } finally {
      await a.close();
      await b.close();
      await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await admin.end();
    }
  });
});
