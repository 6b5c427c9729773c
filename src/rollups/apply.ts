import { type SQL, sql } from "drizzle-orm";
import type { Db } from "../db/client.js";
import type { requests } from "../db/schema/index.js";
import { addSample, emptySketch, type LatencySketch, mergeSketch } from "../stats/summary.js";
import { formatMoney, parseMoney } from "../money.js";
import { mergeSketchSql } from "./sketch-json.js";
import { executeNamed } from "../db/named.js";
import { applyFleetIndexRequests } from "./fleet-index.js";

export type RequestRow = typeof requests.$inferInsert;

export const HOUR_MS = 3_600_000;
export const DAY_MS = 86_400_000;

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

interface RollupAcc {
  bucket: Date;
  tenantId: string | null;
  project: string;
  provider: string;
  modelId: string;
  modality: string;
  isProbe: boolean;
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
 * separates the parts (Postgres text never holds it); a null tenant is "" and a tenant is "=id".
 */
export function rollupKey(a: Pick<RollupAcc, "tenantId" | "project" | "provider" | "modelId" | "modality" | "isProbe">, bucketMs: number): string {
  const tenant = a.tenantId === null ? "" : `=${a.tenantId}`;
  return `${bucketMs}\u0000${tenant}\u0000${a.project}\u0000${a.provider}\u0000${a.modelId}\u0000${a.modality}\u0000${a.isProbe ? 1 : 0}`;
}

function sortedByKey(byKey: Map<string, RollupAcc>): RollupAcc[] {
  return [...byKey.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, acc]) => acc);
}

/**
 * Aggregates a batch at the finest grain (hour, per project) in one pass over the rows. Defaults
 * are applied as the requests table applies them, so rollups key exactly like the stored row.
 */
function aggregateHourly(rows: RequestRow[]): Map<string, RollupAcc> {
  const byKey = new Map<string, RollupAcc>();
  for (const row of rows) {
    const ts = row.ts instanceof Date ? row.ts.getTime() : new Date(row.ts).getTime();
    const bucketMs = Math.floor(ts / HOUR_MS) * HOUR_MS;
    const k = {
      tenantId: row.tenantId ?? null,
      project: row.project ?? "default",
      provider: row.provider,
      modelId: row.modelId,
      modality: row.modality,
      isProbe: row.isProbe ?? false,
    };
    const key = rollupKey(k, bucketMs);
    let acc = byKey.get(key);
    if (!acc) {
      acc = { ...k, bucket: new Date(bucketMs), requests: 0, errors: 0, cost: 0n, rated: 0n, inputUnits: 0, outputUnits: 0, ttfb: emptySketch(), latency: emptySketch() };
      byKey.set(key, acc);
    }
    acc.requests += 1;
    if (row.status === "error") acc.errors += 1;
    acc.cost += parseMoney(row.costUsd);
    acc.rated += parseMoney(row.ratedPriceUsd);
    acc.inputUnits += row.inputUnits ?? 0;
    acc.outputUnits += row.outputUnits ?? 0;
    if (row.ttfbMs !== null && row.ttfbMs !== undefined) addSample(acc.ttfb, row.ttfbMs);
    if (row.totalLatencyMs !== null && row.totalLatencyMs !== undefined) addSample(acc.latency, row.totalLatencyMs);
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
    const k = {
      bucket: grainMs === HOUR_MS ? h.bucket : new Date(Math.floor(h.bucket.getTime() / grainMs) * grainMs),
      tenantId: h.tenantId,
      project: allProjects ? ALL_PROJECTS : h.project,
      provider: h.provider,
      modelId: h.modelId,
      modality: h.modality,
      isProbe: h.isProbe,
    };
    const key = rollupKey(k, k.bucket.getTime());
    let acc = byKey.get(key);
    if (!acc) {
      acc = { ...k, requests: 0, errors: 0, cost: 0n, rated: 0n, inputUnits: 0, outputUnits: 0, ttfb: emptySketch(), latency: emptySketch() };
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

/** The rollup columns, in the order of the INSERT and with their types as json_to_recordset reads them. */
const ROLLUP_COLUMNS = [
  ["bucket", "timestamptz"],
  ["tenant_id", "text"],
  ["project", "text"],
  ["provider", "text"],
  ["model_id", "text"],
  ["modality", "text"],
  ["is_probe", "boolean"],
  ["requests", "bigint"],
  ["errors", "bigint"],
  ["cost_usd", "numeric"],
  ["rated_price_usd", "numeric"],
  ["input_units", "float8"],
  ["output_units", "float8"],
  ["ttfb_count", "int"],
  ["ttfb_sum_ms", "float8"],
  ["ttfb_hist", "jsonb"],
  ["latency_count", "int"],
  ["latency_sum_ms", "float8"],
  ["latency_hist", "jsonb"],
] as const;

/** An accumulator as one json_to_recordset row (a sketch stays an object; empty → null as stored). */
function jsonRow(a: RollupAcc) {
  return {
    bucket: a.bucket.toISOString(),
    tenant_id: a.tenantId,
    project: a.project,
    provider: a.provider,
    model_id: a.modelId,
    modality: a.modality,
    is_probe: a.isProbe,
    requests: a.requests,
    errors: a.errors,
    cost_usd: formatMoney(a.cost),
    rated_price_usd: formatMoney(a.rated),
    input_units: a.inputUnits,
    output_units: a.outputUnits,
    ttfb_count: a.ttfb.count,
    ttfb_sum_ms: a.ttfb.sum,
    ttfb_hist: a.ttfb.count === 0 ? null : a.ttfb,
    latency_count: a.latency.count,
    latency_sum_ms: a.latency.sum,
    latency_hist: a.latency.count === 0 ? null : a.latency,
  };
}

/** One table's INSERT … ON CONFLICT DO UPDATE from a JSON array of rows: sums added, sketches merged in SQL. */
function upsertFromJson(table: string, rowsJson: string): SQL {
  const t = sql.raw(table);
  const col = (name: string) => sql.raw(`${table}.${name}`);
  const add = (name: string) => sql`${sql.raw(name)} = ${col(name)} + excluded.${sql.raw(name)}`;
  const names = sql.raw(ROLLUP_COLUMNS.map(([c]) => c).join(", "));
  const types = sql.raw(ROLLUP_COLUMNS.map(([c, ty]) => `${c} ${ty}`).join(", "));
  // Rows go in in array order (sorted keys): the lock order every writer follows.
  return sql`INSERT INTO ${t} (${names})
    SELECT ${names} FROM json_to_recordset(${rowsJson}::json) AS v(${types})
    ON CONFLICT (bucket, tenant_id, project, provider, model_id, modality, is_probe) DO UPDATE SET
      ${sql.join(
        [
          add("requests"),
          add("errors"),
          add("cost_usd"),
          add("rated_price_usd"),
          add("input_units"),
          add("output_units"),
          add("ttfb_count"),
          add("ttfb_sum_ms"),
          add("latency_count"),
          add("latency_sum_ms"),
          sql`ttfb_hist = ${mergeSketchSql(col("ttfb_hist"), sql`excluded.ttfb_hist`)}`,
          sql`latency_hist = ${mergeSketchSql(col("latency_hist"), sql`excluded.latency_hist`)}`,
        ],
        sql`, `,
      )}`;
}

/** Name of the prepared statement below; bump the suffix whenever its text changes. */
const ROLLUPS_STATEMENT_NAME = "voxgate_rollups_upsert_v2";

/**
 * Folds newly stored request rows into every rollup table (ROLLUP_GRAINS). Ingest calls it inside its
 * transaction with exactly the rows it inserted (never duplicates), so rollups commit or roll back
 * with the rows. The rows are aggregated once (hourly per project) and folded into the other grains.
 * All four tables are upserted by ONE statement, one round trip, as a NAMED prepared statement of
 * constant text (each table's rows are one JSON parameter), so Postgres plans it once per connection:
 * the rollup rows are the hottest rows in the database (every batch of a tenant's hour hits them) and
 * stay locked until COMMIT, and the plan of four upserts with sketch merges costs more than running it.
 * Keys are sorted and the tables always come in the same order, so concurrent batches lock rollup
 * rows in the same order (no deadlock).
 */
export async function applyRequestRollups(tx: Db, rows: RequestRow[]): Promise<void> {
  if (rows.length === 0) return;
  const hourly = aggregateHourly(rows);
  const [first, ...rest] = ROLLUP_GRAINS.map((g) => {
    const accs = g.ms === HOUR_MS && !g.allProjects ? sortedByKey(hourly) : foldInto(hourly.values(), g.ms, g.allProjects);
    return upsertFromJson(g.table, JSON.stringify(accs.map(jsonRow)));
  });
  const last = rest.pop();
  if (!first || !last) throw new Error("ROLLUP_GRAINS must list at least two tables");
  const ctes = [first, ...rest].map((upsert, i) => sql`${sql.raw(`g${i}`)} AS (${upsert})`);
  await executeNamed(tx, ROLLUPS_STATEMENT_NAME, sql`WITH ${sql.join(ctes, sql`, `)} ${last}`);
  // The per-agent rollups of GET /api/agents (rows that name an agent), in the same transaction.
  await applyFleetIndexRequests(tx, rows);
}
