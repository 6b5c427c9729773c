import pg from "pg";
import type { TestProject } from "vitest/node";
import { openDatabase } from "../../src/db/client.js";
import { runMigrations } from "../../src/db/migrate.js";

/** Unique per run: concurrent runs (several worktrees, CI) must never drop each other's databases. */
const RUN_ID = `${process.pid}_${Date.now().toString(36)}`;
export const TEMPLATE_DB = `voxgate_tpl_${RUN_ID}`;

declare module "vitest" {
  export interface ProvidedContext {
    dbBackend: "postgres" | "pglite";
    pgAdminUrl: string;
    pgTemplate: string;
    /** Prefix of every per-file database of this run. */
    pgRunPrefix: string;
  }
}

/**
 * Decides the backend once for the run: Postgres at TEST_DATABASE_URL when it answers (a migrated
 * template database is built here; each test file clones it), PGlite otherwise, said loudly.
 * VOXGATE_TEST_REQUIRE_POSTGRES=1 turns a missing Postgres into a failure.
 */
export default async function setup(project: TestProject) {
  const adminUrl = process.env.TEST_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test";
  const admin = new pg.Client({ connectionString: adminUrl, connectionTimeoutMillis: 3000 });
  try {
    await admin.connect();
  } catch (err) {
    if (process.env.VOXGATE_TEST_REQUIRE_POSTGRES === "1") {
      throw new Error(`VOXGATE_TEST_REQUIRE_POSTGRES=1 but Postgres at ${adminUrl} does not answer: ${String(err)}`);
    }
    process.stderr.write(
      `\n*** Postgres at ${adminUrl} does not answer: running the suite on PGlite (embedded). ***\n` +
        "*** Set TEST_DATABASE_URL or start Postgres to test the collector's real database. ***\n\n",
    );
    project.provide("dbBackend", "pglite");
    project.provide("pgAdminUrl", "");
    project.provide("pgTemplate", "");
    project.provide("pgRunPrefix", "");
    return;
  }
  await admin.query(`DROP DATABASE IF EXISTS ${TEMPLATE_DB}`);
  await admin.query(`CREATE DATABASE ${TEMPLATE_DB}`);
  const tplUrl = new URL(adminUrl);
  tplUrl.pathname = `/${TEMPLATE_DB}`;
  const tpl = await openDatabase({ url: tplUrl.toString() });
  await runMigrations(tpl);
  await tpl.close();
  project.provide("dbBackend", "postgres");
  project.provide("pgAdminUrl", adminUrl);
  project.provide("pgTemplate", TEMPLATE_DB);
  project.provide("pgRunPrefix", `voxgate_t_${RUN_ID}_`);

  return async () => {
    // Drop this run's template and whatever per-file databases of this run were left behind.
    const { rows } = await admin.query<{ datname: string }>(
      "SELECT datname FROM pg_database WHERE starts_with(datname, $1) OR datname = $2",
      [`voxgate_t_${RUN_ID}_`, TEMPLATE_DB],
    );
    for (const { datname } of rows) await admin.query(`DROP DATABASE IF EXISTS ${datname} WITH (FORCE)`).catch(() => {});
    await admin.end();
  };
}
