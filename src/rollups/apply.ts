import { type SQL, sql } from "drizzle-orm";
import type { Db } from "../db/client.js";
import type { requests } from "../db/schema/index.js";
import { addSample, emptySketch, type LatencySketch, mergeSketch } from "../stats/summary.js";
import { scaledToString, toScaled } from "./decimal.js";
import { mergeSketchSql, sketchToJson } from "./sketch-json.js";

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

/** Rollup keys per INSERT statement. */
export const UPSERT_CHUNK_KEYS = 1000;

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

/** A rollup key as one string; sorting these strings is the lock order every writer follows. */
function keyOf(a: Omit<RollupAcc, "requests" | "errors" | "cost" | "rated" | "inputUnits" | "outputUnits" | "ttfb" | "latency">): string {
  return JSON.stringify([a.bucket.getTime(), a.tenantId, a.project, a.provider, a.modelId, a.modality, a.isProbe]);
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
    const k = {
      bucket: new Date(Math.floor(ts / HOUR_MS) * HOUR_MS),
      tenantId: row.tenantId ?? null,
      project: row.project ?? "default",
      provider: row.provider,
      modelId: row.modelId,
      modality: row.modality,
      isProbe: row.isProbe ?? false,
    };
    const key = keyOf(k);
    let acc = byKey.get(key);
    if (!acc) {
      acc = { ...k, requests: 0, errors: 0, cost: 0n, rated: 0n, inputUnits: 0, outputUnits: 0, ttfb: emptySketch(), latency: emptySketch() };
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
    const key = keyOf(k);
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

function valuesRow(a: RollupAcc): SQL {
  return sql`(${a.bucket.toISOString()}::timestamptz, ${a.tenantId}::text, ${a.project}::text, ${a.provider}::text,
    ${a.modelId}::text, ${a.modality}::text, ${a.isProbe}::boolean, ${a.requests}::bigint, ${a.errors}::bigint,
    ${scaledToString(a.cost)}::numeric, ${scaledToString(a.rated)}::numeric, ${a.inputUnits}::float8, ${a.outputUnits}::float8,
    ${a.ttfb.count}::int, ${a.ttfb.sum}::float8, ${sketchToJson(a.ttfb)}::jsonb,
    ${a.latency.count}::int, ${a.latency.sum}::float8, ${sketchToJson(a.latency)}::jsonb)`;
}

/** One INSERT … ON CONFLICT DO UPDATE per grain: sums added, sketches merged in SQL. */
function upsertSql(table: string, accs: RollupAcc[]): SQL {
  const t = sql.raw(table);
  const col = (name: string) => sql.raw(`${table}.${name}`);
  const add = (name: string) => sql`${sql.raw(name)} = ${col(name)} + excluded.${sql.raw(name)}`;
  return sql`INSERT INTO ${t} (bucket, tenant_id, project, provider, model_id, modality, is_probe, requests, errors,
      cost_usd, rated_price_usd, input_units, output_units, ttfb_count, ttfb_sum_ms, ttfb_hist, latency_count, latency_sum_ms, latency_hist)
    VALUES ${sql.join(accs.map(valuesRow), sql`, `)}
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

/**
 * Folds newly stored request rows into every rollup table (ROLLUP_GRAINS). Ingest calls it inside its
 * transaction with exactly the rows it inserted (never duplicates), so rollups commit or roll back
 * with the rows. The rows are aggregated once (hourly per project) and folded into the other grains.
 * A batch with few keys (every ordinary one) upserts all four tables in ONE statement, one round trip:
 * the rollup rows are the hottest rows in the database (every batch of a tenant's hour hits them), and
 * their locks are held from the upsert to COMMIT, so fewer round trips there is more throughput.
 * Keys are sorted and the tables always come in the same order, so concurrent batches lock rollup
 * rows in the same order (no deadlock).
 */
export async function applyRequestRollups(tx: Db, rows: RequestRow[]): Promise<void> {
  if (rows.length === 0) return;
  const hourly = aggregateHourly(rows);
  const grains = ROLLUP_GRAINS.map((g) => ({
    table: g.table,
    accs: g.ms === HOUR_MS && !g.allProjects ? sortedByKey(hourly) : foldInto(hourly.values(), g.ms, g.allProjects),
  }));
  const keys = grains.reduce((n, g) => n + g.accs.length, 0);
  if (keys <= UPSERT_CHUNK_KEYS) {
    await tx.execute(combinedUpsertSql(grains));
    return;
  }
  for (const grain of grains) {
    // Chunks stay under Postgres' 65535 bind parameters (19 per key) and keep the sorted lock order.
    for (let i = 0; i < grain.accs.length; i += UPSERT_CHUNK_KEYS) {
      await tx.execute(upsertSql(grain.table, grain.accs.slice(i, i + UPSERT_CHUNK_KEYS)));
    }
  }
}

/**
 * All grains' upserts as one statement: the first ones as data-modifying CTEs, the last as the main
 * statement. Each table appears once with distinct keys, so no row is affected twice.
 */
function combinedUpsertSql(grains: { table: string; accs: RollupAcc[] }[]): SQL {
  const parts = grains.filter((g) => g.accs.length > 0);
  const last = parts.at(-1);
  if (!last) return sql`SELECT 1`;
  const ctes = parts.slice(0, -1).map((g, i) => sql`${sql.raw(`g${i}`)} AS (${upsertSql(g.table, g.accs)})`);
  if (ctes.length === 0) return upsertSql(last.table, last.accs);
  return sql`WITH ${sql.join(ctes, sql`, `)} ${upsertSql(last.table, last.accs)}`;
}
