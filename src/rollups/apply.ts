import { type SQL, sql } from "drizzle-orm";
import type { Db } from "../db/client.js";
import type { requests } from "../db/schema/index.js";
import { addSample, emptySketch, type LatencySketch, mergeSketch } from "../stats/summary.js";
import { scaledToString, toScaled } from "./decimal.js";
import { sketchFromJson } from "./sketch-json.js";
import { executeNamed } from "../db/named.js";

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
    acc.cost += toScaled(row.costUsd);
    acc.rated += toScaled(row.ratedPriceUsd);
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
  ["latency_count", "int"],
  ["latency_sum_ms", "float8"],
] as const;

/** An accumulator as one json_to_recordset row of scalars (the sketches are written by the second statement). */
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
    cost_usd: scaledToString(a.cost),
    rated_price_usd: scaledToString(a.rated),
    input_units: a.inputUnits,
    output_units: a.outputUnits,
    ttfb_count: a.ttfb.count,
    ttfb_sum_ms: a.ttfb.sum,
    latency_count: a.latency.count,
    latency_sum_ms: a.latency.sum,
  };
}

/**
 * One table's INSERT … ON CONFLICT DO UPDATE from a JSON array of rows: sums added, sketch columns
 * left as they are (NULL for a new row), RETURNING the stored sketches and the row's ctid so the
 * merged sketches can be written back. The row stays locked by this transaction until COMMIT, so
 * its ctid cannot change before the second statement.
 */
function upsertFromJson(grain: number, table: string, rowsJson: string): SQL {
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
        ["requests", "errors", "cost_usd", "rated_price_usd", "input_units", "output_units", "ttfb_count", "ttfb_sum_ms", "latency_count", "latency_sum_ms"].map(add),
        sql`, `,
      )}
    RETURNING ${sql.raw(String(grain))} AS g, ctid::text AS tid, (extract(epoch FROM bucket) * 1000)::float8 AS ms,
      tenant_id, project, provider, model_id, modality, is_probe, ttfb_hist, latency_hist`;
}

/**
 * One table's UPDATE of merged sketches by ctid (rows this transaction locked in the upsert). The
 * `ctid = ANY(ARRAY(…))` makes it a TID scan; a join on ctid alone is planned as a sequential scan.
 */
function sketchUpdateFromJson(table: string, rowsJson: string): SQL {
  return sql`UPDATE ${sql.raw(table)} AS t SET ttfb_hist = v.th, latency_hist = v.lh
    FROM json_to_recordset(${rowsJson}::json) AS v(tid tid, th jsonb, lh jsonb)
    WHERE t.ctid = v.tid AND t.ctid = ANY(ARRAY(SELECT e.tid FROM json_to_recordset(${rowsJson}::json) AS e(tid tid)))`;
}

/** Names of the prepared statements below; bump the suffix whenever their text changes. */
const ROLLUPS_STATEMENT_NAME = "voxgate_rollups_upsert_v2";
const SKETCHES_STATEMENT_NAME = "voxgate_rollups_sketches_v2";

interface UpsertedRow {
  g: number;
  tid: string;
  ms: number;
  tenant_id: string | null;
  project: string;
  provider: string;
  model_id: string;
  modality: string;
  is_probe: boolean;
  ttfb_hist: unknown;
  latency_hist: unknown;
}

/** Runs ctes[0..n-2] as data-modifying CTEs and the last as the main statement (one round trip). */
function asOneStatement(parts: SQL[], main: (names: string[]) => SQL | null): SQL {
  const names = parts.map((_, i) => `g${i}`);
  const ctes = parts.map((part, i) => sql`${sql.raw(names[i] ?? "")} AS (${part})`);
  return sql`WITH ${sql.join(ctes, sql`, `)} ${main(names)}`;
}

/**
 * Folds newly stored request rows into every rollup table (ROLLUP_GRAINS). Ingest calls it inside its
 * transaction with exactly the rows it inserted (never duplicates), so rollups commit or roll back
 * with the rows. The rows are aggregated once (hourly per project) and folded into the other grains.
 * Two NAMED prepared statements of constant text (each table's rows one JSON parameter), so Postgres
 * plans them once per connection:
 *  1. all four tables upserted in one statement: counts and sums added in SQL, RETURNING the stored
 *     sketches of the touched keys (keys sorted, tables always in the same order, so concurrent batches
 *     lock rollup rows in the same order: no deadlock);
 *  2. the sketches merged in JS (mergeSketch; jsonb merging in SQL cost more than the rest of the
 *     statement) and written back by ctid to the rows statement 1 locked.
 */
export async function applyRequestRollups(tx: Db, rows: RequestRow[]): Promise<void> {
  if (rows.length === 0) return;
  const hourly = aggregateHourly(rows);
  const accsByGrain = ROLLUP_GRAINS.map((g) => (g.ms === HOUR_MS && !g.allProjects ? sortedByKey(hourly) : foldInto(hourly.values(), g.ms, g.allProjects)));
  const upserts = ROLLUP_GRAINS.map((g, i) => upsertFromJson(i, g.table, JSON.stringify((accsByGrain[i] ?? []).map(jsonRow))));
  const upserted = (await executeNamed(
    tx,
    ROLLUPS_STATEMENT_NAME,
    asOneStatement(upserts, (names) => sql.raw(names.map((n) => `SELECT * FROM ${n}`).join(" UNION ALL "))),
  )) as { rows: UpsertedRow[] };

  const batchByGrain = accsByGrain.map((accs) => new Map(accs.map((a) => [rollupKey(a, a.bucket.getTime()), a])));
  const merged: { tid: string; th: LatencySketch | null; lh: LatencySketch | null }[][] = ROLLUP_GRAINS.map(() => []);
  for (const r of upserted.rows) {
    const acc = batchByGrain[r.g]?.get(rollupKey({ tenantId: r.tenant_id, project: r.project, provider: r.provider, modelId: r.model_id, modality: r.modality, isProbe: r.is_probe }, r.ms));
    if (!acc) throw new Error("rollup upsert returned a key the batch does not hold");
    if (acc.ttfb.count === 0 && acc.latency.count === 0) continue; // stored sketches unchanged
    const th = mergeSketch(sketchFromJson(r.ttfb_hist), acc.ttfb);
    const lh = mergeSketch(sketchFromJson(r.latency_hist), acc.latency);
    merged[r.g]?.push({ tid: r.tid, th: th.count === 0 ? null : th, lh: lh.count === 0 ? null : lh });
  }
  if (merged.every((m) => m.length === 0)) return;
  const updates = ROLLUP_GRAINS.map((g, i) => sketchUpdateFromJson(g.table, JSON.stringify(merged[i] ?? [])));
  const last = updates.pop();
  if (!last) throw new Error("ROLLUP_GRAINS must list at least two tables");
  await executeNamed(tx, SKETCHES_STATEMENT_NAME, asOneStatement(updates, () => last));
}
