import { parseEnv } from "../config/env.js";
import { loadConfig } from "../config/load.js";
import type { Config } from "../config/schema.js";
import { type Database, openDatabase } from "../db/client.js";
import { runMigrations } from "../db/migrate.js";
import { databaseTarget } from "../server.js";

/** What a CLI command works on: the same config and store `voxgate serve` would use. */
export async function openStore(): Promise<{ database: Database; config: Config }> {
  const env = parseEnv();
  const loaded = loadConfig({ explicitPath: env.VOXGATE_CONFIG, home: env.HOME });
  for (const warning of loaded.warnings) process.stderr.write(`warning: ${warning}\n`);
  const database = await openDatabase(databaseTarget(loaded, env));
  await runMigrations(database);
  return { database, config: loaded.config };
}

/** Runs fn against the store and always closes it. */
export async function withStore<T>(fn: (store: { database: Database; config: Config }) => Promise<T>): Promise<T> {
  const store = await openStore();
  try {
    return await fn(store);
  } finally {
    await store.database.close();
  }
}
