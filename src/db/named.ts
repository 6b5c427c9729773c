import type { SQL } from "drizzle-orm";
import { PgDialect } from "drizzle-orm/pg-core";
import type { Db } from "./client.js";

const dialect = new PgDialect();

/**
 * Runs a query as a NAMED prepared statement: Postgres parses and plans it once per connection
 * instead of once per call. The query's text must be constant for a given name (every value a
 * parameter, no per-call structure). PGlite ignores the name. Answers the driver's `{ rows }`.
 */
export function executeNamed(db: Db, name: string, query: SQL): Promise<unknown> {
  const { sql: text, params } = dialect.sqlToQuery(query);
  return db._.session.prepareQuery({ sql: text, params }, undefined, name, false).execute();
}
