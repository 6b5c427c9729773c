import { type SQL, sql } from "drizzle-orm";
import { requestRollups } from "../db/schema/request-rollups.js";
import { recordsetType, storedColumns } from "../db/table-columns.js";
import { ROLLUP_KEY_COLUMNS, ROW_KEY } from "./apply.js";

const columns = storedColumns(requestRollups);
/** Key columns that may be NULL (tenant_id): compared with IS NOT DISTINCT FROM, not `=`. */
const NULLABLE = new Set(columns.filter((c) => !c.column.notNull).map((c) => c.name));
/** Of those, the text ones: also compared as coalesce(…, '') = coalesce(…, ''), which a hash join can use. */
const NULLABLE_TEXT = new Set(columns.filter((c) => NULLABLE.has(c.name) && recordsetType(c.column) === "text").map((c) => c.name));

/**
 * The rollup key computed from request rows (columns `ts` and the key's names): the bucket at
 * `unit` ('hour' | 'day', UTC), then each key column; `project` is `allProjects` when given.
 */
export function rowKeySelect(unit: "hour" | "day", allProjects: string | null): SQL {
  const parts = [sql`date_trunc(${unit}, ts, 'UTC') AS bucket`];
  for (const { name } of ROW_KEY) {
    parts.push(name === "project" && allProjects !== null ? sql`${allProjects}::text AS project` : sql.raw(name));
  }
  return sql.join(parts, sql`, `);
}

/** `a.k = b.k AND …` over the whole key (NULL-safe on nullable columns). */
export function keyMatch(a: string, b: string): SQL {
  return sql.raw(
    ROLLUP_KEY_COLUMNS.map((c) => {
      if (!NULLABLE.has(c)) return `${a}.${c} = ${b}.${c}`;
      const same = `${a}.${c} IS NOT DISTINCT FROM ${b}.${c}`;
      return NULLABLE_TEXT.has(c) ? `coalesce(${a}.${c}, '') = coalesce(${b}.${c}, '') AND ${same}` : same;
    }).join(" AND "),
  );
}

/** The key's column list, `bucket, tenant_id, …`. */
export const KEY_LIST = sql.raw(ROLLUP_KEY_COLUMNS.join(", "));
