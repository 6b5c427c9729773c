import { type Column, getTableColumns, is, SQL, type Table } from "drizzle-orm";
import { toSnakeCase } from "drizzle-orm/casing";

/**
 * Column lists derived from the Drizzle tables (src/db/schema), for the few hot statements written
 * as SQL text over JSON rows (ingest's insert, the rollup upserts): a column added to a table reaches
 * them without another list to edit. Names are the stored (snake_case) names, as `casing: "snake_case"`
 * (src/db/client.ts, drizzle.config.ts) spells them.
 */

/** `modelId` → `model_id` at the type level (the keys of this schema: camelCase words, no acronyms). */
export type SnakeCase<S extends string> = S extends `${infer H}${infer T}`
  ? `${H extends Lowercase<H> ? H : `_${Lowercase<H>}`}${SnakeCase<T>}`
  : S;

/** A row keyed by stored column names: `StoredRow<typeof t.$inferInsert>`. */
export type StoredRow<T> = { [K in keyof T as SnakeCase<K & string>]: T[K] };

export interface StoredColumn {
  /** The property of the Drizzle table (`modelId`). */
  key: string;
  /** The column as stored (`model_id`). */
  name: string;
  column: Column;
}

/** The stored name of a column: its explicit name, or its key in snake_case. */
export function storedName(column: Column): string {
  return column.keyAsName ? toSnakeCase(column.name) : column.name;
}

/** Every column of a table in declaration order (the order of the CREATE TABLE), with its stored name. */
export function storedColumns(table: Table): StoredColumn[] {
  return Object.entries(getTableColumns(table)).map(([key, column]) => ({ key, name: storedName(column), column }));
}

/** Whether the column's default is computed by the database (`now()`): such columns are left to it. */
export function hasServerDefault(column: Column): boolean {
  return is(column.default, SQL);
}

/** The literal defaults of a table's columns (`project` → "default"), by stored name. */
export function literalDefaults(table: Table): Map<string, unknown> {
  const out = new Map<string, unknown>();
  for (const { name, column } of storedColumns(table)) {
    if (column.hasDefault && column.default !== undefined && !hasServerDefault(column)) out.set(name, column.default);
  }
  return out;
}

/**
 * The type a column has in a `json_to_recordset(…) AS v(name type, …)` list, in Postgres's short
 * spelling (timestamptz, float8, int; numeric without its typmod: the target column applies it).
 */
export function recordsetType(column: Column): string {
  const t = column.getSQLType().replace(/\s*\(.*\)$/, "");
  return SHORT_TYPES[t] ?? t;
}

const SHORT_TYPES: Record<string, string> = {
  "timestamp with time zone": "timestamptz",
  "double precision": "float8",
  integer: "int",
};
