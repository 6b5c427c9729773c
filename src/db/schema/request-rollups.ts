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

/** Per-hour aggregates of requests so dashboards read buckets, not rows. */
export const requestRollups = pgTable("request_rollups", rollupColumns(), (t) => [
  unique("request_rollups_key_uq")
    .on(t.bucket, t.tenantId, t.project, t.provider, t.modelId, t.modality, t.isProbe)
    .nullsNotDistinct(),
]);

/**
 * Per-UTC-day aggregates, written in the same transaction as the hourly ones: a month window reads
 * ~30 day buckets plus two partial days of hour buckets instead of ~720 hour buckets.
 */
export const requestRollupsDaily = pgTable("request_rollups_daily", rollupColumns(), (t) => [
  unique("request_rollups_daily_key_uq")
    .on(t.bucket, t.tenantId, t.project, t.provider, t.modelId, t.modality, t.isProbe)
    .nullsNotDistinct(),
]);

/**
 * The same two grains with every project folded into project "*": latency over all projects (the
 * dashboard default and the metrics summaries) merges a third of the sketches.
 */
export const requestModelRollups = pgTable("request_model_rollups", rollupColumns(), (t) => [
  unique("request_model_rollups_key_uq")
    .on(t.bucket, t.tenantId, t.project, t.provider, t.modelId, t.modality, t.isProbe)
    .nullsNotDistinct(),
]);

export const requestModelRollupsDaily = pgTable("request_model_rollups_daily", rollupColumns(), (t) => [
  unique("request_model_rollups_daily_key_uq")
    .on(t.bucket, t.tenantId, t.project, t.provider, t.modelId, t.modality, t.isProbe)
    .nullsNotDistinct(),
]);
