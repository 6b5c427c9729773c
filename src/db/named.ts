import { createHash } from "node:crypto";
import type { Query, SQL } from "drizzle-orm";
import { PgDialect } from "drizzle-orm/pg-core";
import type { Db } from "./client.js";

const dialect = new PgDialect();

/**
 * Runs a query as a NAMED prepared statement: Postgres parses and plans it once per connection
 * instead of once per call. The query's text must be constant for a given name (every value a
 * parameter, no per-call structure). PGlite ignores the name. Answers the driver's `{ rows }`.
 */
export function executeNamed(db: Db, name: string, query: SQL): Promise<unknown> {
  return runNamed(db, name, dialect.sqlToQuery(query));
}

/** Runs a compiled query under its statement name, its placeholders (if any) filled from `values`. */
function runNamed(db: Db, name: string, query: Query, values: Record<string, unknown> = {}): Promise<unknown> {
  return db._.session.prepareQuery(query, undefined, name, false).execute(values);
}

/**
 * A NAMED prepared statement whose text is built once, on first use: `build` returns the query with
 * drizzle placeholders (`sql.placeholder(key)`) where each call's values go, and each call fills them
 * by key (a missing key throws). For a statement whose text is large and constant: building the
 * rollup upsert (seven tables, each sketch column merged in SQL) per batch cost Node 2-3 ms; a 500-row
 * rollup fold took 7.2 ms of Node CPU that way, 4.4 ms with it built once (docs/PERFORMANCE.md).
 * The name is `prefix` and the first 12 hex digits of the text's SHA-256: a name never carries two
 * texts (a connection that prepared an older text under a name would run it), whatever the schema or
 * the wiring that built the text, with nothing to bump by hand.
 */
export function namedStatement(prefix: string, build: () => SQL): (db: Db, values: Record<string, unknown>) => Promise<unknown> {
  let query: Query | undefined;
  let name = "";
  return (db, values) => {
    if (query === undefined) {
      query = dialect.sqlToQuery(build());
      name = statementName(prefix, query.sql);
    }
    return runNamed(db, name, query, values);
  };
}

/** A statement's name from its text (namedStatement). */
export const statementName = (prefix: string, text: string) => `${prefix}_${createHash("sha256").update(text).digest("hex").slice(0, 12)}`;
