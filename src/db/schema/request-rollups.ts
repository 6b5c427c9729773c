import { bigint, boolean, doublePrecision, integer, jsonb, pgTable, text, unique } from "drizzle-orm/pg-core";
import { money, tstz } from "./columns.js";

/**
 * Per-hour aggregates of requests so dashboards read buckets, not rows.
 * Latency histograms are mergeable (see src/stats) so percentiles over any window are exact to a bucket.
 */
export const requestRollups = pgTable(
  "request_rollups",
  {
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
  },
  (t) => [
    unique("request_rollups_key_uq")
      .on(t.bucket, t.tenantId, t.project, t.provider, t.modelId, t.modality, t.isProbe)
      .nullsNotDistinct(),
  ],
);
