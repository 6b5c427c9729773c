import { type Placeholder, type SQL, sql } from "drizzle-orm";
import { ROLLUP_KEY, requestRollups } from "../db/schema/request-rollups.js";
import { type RequestRow, requests } from "../db/schema/requests.js";
import { literalDefaults, recordsetType, type SnakeCase, storedColumns } from "../db/table-columns.js";
import { addSample, emptySketch, type LatencySketch, mergeSketch } from "../stats/summary.js";
import { formatMoney, parseMoney } from "../money.js";
import { type BatchSamples, leftOutSamplesSql, mergeSketchSql } from "./sketch-json.js";
import { DAY_MS, HOUR_MS } from "./buckets.js";
import type { RequestProjection } from "./projection.js";

export type { RequestRow } from "../db/schema/requests.js";

export { DAY_MS, HOUR_MS } from "./buckets.js";

/**
 * The rollup tables, one column layout (src/db/schema/request-rollups.ts): hour and day grains, each
 * per project and with projects folded into "*" (for latency over all projects).
 */
export const ROLLUP_GRAINS = [
  { table: "request_rollups", ms: HOUR_MS, allProjects: false },
  { table: "request_rollups_daily", ms: DAY_MS, allProjects: false },
  { table: "request_model_rollups", ms: HOUR_MS, allProjects: true },
  { table: "request_model_rollups_daily", ms: DAY_MS, allProjects: true },
] as const;

/** The project key of rows in the all-projects tables. */
export const ALL_PROJECTS = "*";

/** The key columns other than `bucket`: request columns of the same name (ROLLUP_KEY). */
export type RowKeyColumn = Exclude<SnakeCase<(typeof ROLLUP_KEY)[number]>, "bucket">;
/** A rollup key's values other than the bucket, by column name. */
export type RowKey = { [C in RowKeyColumn]: Exclude<RequestRow[C], undefined> };

const rollupColumns = storedColumns(requestRollups);
const byKey = new Map(rollupColumns.map((c) => [c.key, c]));
const requestDefaults = literalDefaults(requests);
const requestColumnNames = new Set(storedColumns(requests).map((c) => c.name));

/** The key's stored column names in key order, bucket first (the unique constraint's order). */
export const ROLLUP_KEY_COLUMNS: readonly string[] = ROLLUP_KEY.map((k) => {
  const c = byKey.get(k);
  if (!c) throw new Error(`rollup key ${k} is not a rollup column`);
  return c.name;
});

/**
 * The non-bucket key columns with the requests table's default for a row that leaves them out
 * (project "default", is_probe false; null otherwise), so rollups key exactly like the stored row.
 */
export const ROW_KEY: readonly { name: RowKeyColumn; dflt: RowKey[RowKeyColumn] }[] = ROLLUP_KEY_COLUMNS.filter((n) => n !== "bucket").map((name) => {
  if (!requestColumnNames.has(name)) throw new Error(`rollup key ${name} is not a requests column`);
  return { name: name as RowKeyColumn, dflt: (requestDefaults.get(name) ?? null) as RowKey[RowKeyColumn] };
});

export interface RollupAcc {
  bucket: Date;
  key: RowKey;
  requests: number;
  errors: number;
  cost: bigint;
  rated: bigint;
  inputUnits: number;
  outputUnits: number;
  ttfb: LatencySketch;
  latency: LatencySketch;
}

/**
 * A rollup key as one string; sorting these strings is the lock order every writer follows. NUL
 * separates the parts (Postgres text never holds it); null is "" and any other value "=value".
 */
export function rollupKey(key: RowKey, bucketMs: number): string {
  let s = String(bucketMs);
  for (const { name } of ROW_KEY) {
    const v = key[name];
    s += v === null ? "\u0000" : `\u0000=${v}`;
  }
  return s;
}

function sortedByKey(byKey: Map<string, RollupAcc>): RollupAcc[] {
  return [...byKey.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, acc]) => acc);
}

const newAcc = (bucket: Date, key: RowKey): RollupAcc => ({
  bucket,
  key,
  requests: 0,
  errors: 0,
  cost: 0n,
  rated: 0n,
  inputUnits: 0,
  outputUnits: 0,
  ttfb: emptySketch(),
  latency: emptySketch(),
});

/** The row's key values, defaults applied as the requests table applies them. */
function rowKey(row: RequestRow): RowKey {
  const k: Record<string, unknown> = {};
  for (const { name, dflt } of ROW_KEY) k[name] = row[name] ?? dflt;
  return k as RowKey;
}

/** Whether two rows have the same rollup key values (defaults applied), the bucket aside. */
function sameRowKey(a: RequestRow, b: RequestRow): boolean {
  for (const { name, dflt } of ROW_KEY) if ((a[name] ?? dflt) !== (b[name] ?? dflt)) return false;
  return true;
}

/** Aggregates a batch at the finest grain (hour, per project) in one pass over the rows. */
function aggregateHourly(rows: RequestRow[]): Map<string, RollupAcc> {
  const byKey = new Map<string, RollupAcc>();
  // A batch is mostly runs of one key (a gateway's tick: one model, project and hour): a row keyed
  // like the one before joins its accumulator without building the key object and string again.
  let prev: { row: RequestRow; bucketMs: number; acc: RollupAcc } | null = null;
  for (const row of rows) {
    const ts = row.ts instanceof Date ? row.ts.getTime() : new Date(row.ts).getTime();
    const bucketMs = Math.floor(ts / HOUR_MS) * HOUR_MS;
    let acc: RollupAcc | undefined;
    if (prev !== null && prev.bucketMs === bucketMs && sameRowKey(prev.row, row)) acc = prev.acc;
    else {
      const k = rowKey(row);
      const key = rollupKey(k, bucketMs);
      acc = byKey.get(key);
      if (!acc) {
        acc = newAcc(new Date(bucketMs), k);
        byKey.set(key, acc);
      }
      prev = { row, bucketMs, acc };
    }
    acc.requests += 1;
    if (row.status === "error") acc.errors += 1;
    acc.cost += parseMoney(row.cost_usd);
    acc.rated += parseMoney(row.rated_price_usd);
    acc.inputUnits += row.input_units ?? 0;
    acc.outputUnits += row.output_units ?? 0;
    if (row.ttfb_ms !== null && row.ttfb_ms !== undefined) addSample(acc.ttfb, row.ttfb_ms);
    if (row.total_latency_ms !== null && row.total_latency_ms !== undefined) addSample(acc.latency, row.total_latency_ms);
  }
  return byKey;
}

/**
 * Folds hourly per-project accumulators into a coarser grain (day and/or all projects). Counts,
 * money (scaled BigInts) and sketch buckets add exactly, so this equals aggregating the rows again.
 */
function foldInto(hourly: Iterable<RollupAcc>, grainMs: number, allProjects: boolean): RollupAcc[] {
  const byKey = new Map<string, RollupAcc>();
  for (const h of hourly) {
    const bucket = grainMs === HOUR_MS ? h.bucket : new Date(Math.floor(h.bucket.getTime() / grainMs) * grainMs);
    const k: RowKey = allProjects ? { ...h.key, project: ALL_PROJECTS } : h.key;
    const key = rollupKey(k, bucket.getTime());
    let acc = byKey.get(key);
    if (!acc) {
      acc = newAcc(bucket, k);
      byKey.set(key, acc);
    }
    acc.requests += h.requests;
    acc.errors += h.errors;
    acc.cost += h.cost;
    acc.rated += h.rated;
    acc.inputUnits += h.inputUnits;
    acc.outputUnits += h.outputUnits;
    mergeSketch(acc.ttfb, h.ttfb);
    mergeSketch(acc.latency, h.latency);
  }
  return sortedByKey(byKey);
}

/** Aggregates a batch for one grain: one accumulator per rollup key, sorted by key (lock order). */
export function aggregateRows(rows: RequestRow[], grainMs: number, allProjects = false): RollupAcc[] {
  const hourly = aggregateHourly(rows);
  return grainMs === HOUR_MS && !allProjects ? sortedByKey(hourly) : foldInto(hourly.values(), grainMs, allProjects);
}

/** The rollup columns in table order, with their types as json_to_recordset reads them. */
const ROLLUP_COLUMNS = rollupColumns.map((c) => [c.name, recordsetType(c.column)] as const);

/**
 * An accumulator as one json_to_recordset row (a sketch stays an object; empty → null as stored).
 * `key`: its table and rollupKey, naming its sketches for `samples` (src/rollups/sketch-json.ts).
 */
function jsonRow(a: RollupAcc, key: string, samples: BatchSamples) {
  return {
    bucket: a.bucket.toISOString(),
    ...a.key,
    requests: a.requests,
    errors: a.errors,
    cost_usd: formatMoney(a.cost),
    rated_price_usd: formatMoney(a.rated),
    input_units: a.inputUnits,
    output_units: a.outputUnits,
    ttfb_count: a.ttfb.count,
    ttfb_sum_ms: a.ttfb.sum,
    ttfb_hist: a.ttfb.count === 0 ? null : samples.sketch(`${key}\u0001ttfb`, a.ttfb),
    latency_count: a.latency.count,
    latency_sum_ms: a.latency.sum,
    latency_hist: a.latency.count === 0 ? null : samples.sketch(`${key}\u0001latency`, a.latency),
  };
}

/** The measure columns an upsert adds to the stored row (everything but the key and the sketches). */
const ADDED = rollupColumns.filter((c) => !ROLLUP_KEY_COLUMNS.includes(c.name) && recordsetType(c.column) !== "jsonb").map((c) => c.name);
/** The sketch columns an upsert merges in SQL. */
const MERGED = rollupColumns.filter((c) => recordsetType(c.column) === "jsonb").map((c) => c.name);

/** One table's INSERT … ON CONFLICT DO UPDATE from a JSON array of rows: sums added, sketches merged in SQL. */
function upsertFromJson(table: string, rowsJson: Placeholder): SQL {
  const t = sql.raw(table);
  const col = (name: string) => sql.raw(`${table}.${name}`);
  const add = (name: string) => sql`${sql.raw(name)} = ${col(name)} + excluded.${sql.raw(name)}`;
  const names = sql.raw(ROLLUP_COLUMNS.map(([c]) => c).join(", "));
  const types = sql.raw(ROLLUP_COLUMNS.map(([c, ty]) => `${c} ${ty}`).join(", "));
  // Rows go in in array order (sorted keys): the lock order every writer follows.
  return sql`INSERT INTO ${t} (${names})
    SELECT ${names} FROM json_to_recordset(${rowsJson}::json) AS v(${types})
    ON CONFLICT (${sql.raw(ROLLUP_KEY_COLUMNS.join(", "))}) DO UPDATE SET
      ${sql.join(
        [...ADDED.map(add), ...MERGED.map((name) => sql`${sql.raw(name)} = ${mergeSketchSql(col(name), sql`excluded.${sql.raw(name)}`)}`)],
        sql`, `,
      )}`;
}

/**
 * The request rollups projection (src/rollups/projection.ts): newly stored rows folded into the four
 * ROLLUP_GRAINS tables by the fold statement, one upsert per table in ROLLUP_GRAINS order. The rows
 * are aggregated once (hourly per project) and folded into the other grains; each table's rows go in
 * sorted by rollupKey (its lock order, which re-rating's adjustRollupMoney follows too). The rollup
 * rows are the hottest rows in the database (every batch of a tenant's hour hits them) and stay
 * locked until COMMIT: with the per-agent upserts as three statements before this one, 4 concurrent
 * ingest clients queued on those locks while the single Node process did other batches' work between
 * round trips (bench:ingest 14.5k records/s); hence one fold statement right before COMMIT.
 */
export const requestRollupsProjection: RequestProjection = {
  name: "request rollups",
  fold: {
    upserts: () =>
      ROLLUP_GRAINS.map((g) => ({
        name: g.table,
        sql: upsertFromJson(g.table, sql.placeholder(g.table)),
        leftOut: leftOutSamplesSql(MERGED),
      })),
    rows(rows, _turns, samples) {
      const hourly = aggregateHourly(rows);
      const values: Record<string, string> = {};
      for (const g of ROLLUP_GRAINS) {
        const accs = g.ms === HOUR_MS && !g.allProjects ? sortedByKey(hourly) : foldInto(hourly.values(), g.ms, g.allProjects);
        values[g.table] = JSON.stringify(accs.map((a) => jsonRow(a, `${g.table}\u0001${rollupKey(a.key, a.bucket.getTime())}`, samples)));
      }
      return { values };
    },
  },
};
