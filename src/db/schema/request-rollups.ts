import { bigint, boolean, doublePrecision, integer, jsonb, pgTable, text, unique } from "drizzle-orm/pg-core";
import { money, tstz } from "./columns.js";

// The same columns at two grains. Latency sketches (src/stats/summary.ts) are mergeable, so
// percentiles over any window combine hour and day buckets exactly to the sketch's 1%.
const rollupColumns = () => ({
  bucket: tstz().notNull(),
  tenantId: text(),
  project: text().notNull(),
  provider: text().notNull(),
  modelId: text().notNull(),
  modality: text().notNull(),
  isProbe: boolean().notNull().default(false),
  requests: bigint({ mode: "number" }).notNull().default(0),
  errors: bigint({ mode: "number" }).notNull().default(0),
  costUsd: money().notNull().default("0"),
  ratedPriceUsd: money().notNull().default("0"),
  inputUnits: doublePrecision().notNull().default(0),
  outputUnits: doublePrecision().notNull().default(0),
  ttfbCount: integer().notNull().default(0),
  ttfbSumMs: doublePrecision().notNull().default(0),
  ttfbHist: jsonb(),
  latencyCount: integer().notNull().default(0),
  latencySumMs: doublePrecision().notNull().default(0),
  latencyHist: jsonb(),
});

/**
 * The rollup key, declared once: one row per value of these columns in every rollup table (its
 * unique constraint), the ON CONFLICT target of the upserts and the GROUP BY of the rebuild
 * (src/rollups). Every key column but `bucket` is a `requests` column of the same name.
 */
export const ROLLUP_KEY = ["bucket", "tenantId", "project", "provider", "modelId", "modality", "isProbe"] as const;

/** One rollup table: the shared columns and the key's unique constraint (NULL tenant is one more tenant). */
function rollupTable<N extends string>(name: N) {
  return pgTable(name, rollupColumns(), (t) => [
    unique(`${name}_key_uq`)
      .on(t[ROLLUP_KEY[0]], ...ROLLUP_KEY.slice(1).map((k) => t[k]))
      .nullsNotDistinct(),
  ]);
}

/** Per-hour aggregates of requests so dashboards read buckets, not rows. */
export const requestRollups = rollupTable("request_rollups");

/**
 * Per-UTC-day aggregates, written in the same transaction as the hourly ones: a month window reads
 * ~30 day buckets plus two partial days of hour buckets instead of ~720 hour buckets.
 */
export const requestRollupsDaily = rollupTable("request_rollups_daily");

/**
 * The same two grains with every project folded into project "*": latency over all projects (the
 * dashboard default and the metrics summaries) merges a third of the sketches.
 */
export const requestModelRollups = rollupTable("request_model_rollups");

export const requestModelRollupsDaily = rollupTable("request_model_rollups_daily");

/** Any of the four (they share one column layout). */
export type RollupTable = typeof requestRollups | typeof requestRollupsDaily | typeof requestModelRollups | typeof requestModelRollupsDaily;
