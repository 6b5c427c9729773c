import { type SQL, sql } from "drizzle-orm";
import type { Db } from "../db/client.js";
import type { requests } from "../db/schema/index.js";
import { addSample, emptySketch, type LatencySketch } from "../stats/summary.js";
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

/** Defaults as the requests table applies them, so rollups key exactly like the stored row. */
function keyParts(row: RequestRow, grainMs: number, allProjects: boolean) {
  const ts = row.ts instanceof Date ? row.ts.getTime() : new Date(row.ts).getTime();
  return {
    bucket: new Date(Math.floor(ts / grainMs) * grainMs),
    tenantId: row.tenantId ?? null,
    project: allProjects ? ALL_PROJECTS : (row.project ?? "default"),
    provider: row.provider,
    modelId: row.modelId,
    modality: row.modality,
    isProbe: row.isProbe ?? false,
  };
}

/** Aggregates a batch in memory: one accumulator per rollup key, sorted by key (lock order). */
export function aggregateRows(rows: RequestRow[], grainMs: number, allProjects = false): RollupAcc[] {
  const byKey = new Map<string, RollupAcc>();
  for (const row of rows) {
    const k = keyParts(row, grainMs, allProjects);
    const key = JSON.stringify([k.bucket.getTime(), k.tenantId, k.project, k.provider, k.modelId, k.modality, k.isProbe]);
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
  return [...byKey.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, acc]) => acc);
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
 * with the rows. Keys are sorted so concurrent batches lock rollup rows in the same order.
 */
export async function applyRequestRollups(tx: Db, rows: RequestRow[]): Promise<void> {
  if (rows.length === 0) return;
  for (const grain of ROLLUP_GRAINS) {
    const accs = aggregateRows(rows, grain.ms, grain.allProjects);
    // Chunks stay under Postgres' 65535 bind parameters (19 per key) and keep the sorted lock order.
    for (let i = 0; i < accs.length; i += UPSERT_CHUNK_KEYS) {
      await tx.execute(upsertSql(grain.table, accs.slice(i, i + UPSERT_CHUNK_KEYS)));
    }
  }
}
