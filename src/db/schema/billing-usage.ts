import { sql } from "drizzle-orm";
import { bigint, bigserial, integer, jsonb, numeric, pgTable, text, unique } from "drizzle-orm/pg-core";
import { money, tstz } from "./columns.js";

/**
 * GET /v1/billing/usage's source: one row per (UTC day, tenant, modality, model, rate rule), written in
 * ingest's transaction with the request rollups, so usage keeps answering after retention removed the
 * day's raw rows. Money is numeric (exact sums); units are numeric too, so a sum of sums equals the sum
 * of the rows. The rate rule is in the key because line items list the rules that rated them.
 */
export const billingUsageDaily = pgTable(
  "billing_usage_daily",
  {
    bucket: tstz().notNull(),
    tenantId: text(),
    modality: text().notNull(),
    modelId: text().notNull(),
    rateRule: text(),
    requests: bigint({ mode: "number" }).notNull().default(0),
    ratedPriceUsd: money().notNull().default("0"),
    costUsd: money().notNull().default("0"),
    /** Rows with no rated price / no recorded cost. */
    unpriced: bigint({ mode: "number" }).notNull().default(0),
    uncosted: bigint({ mode: "number" }).notNull().default(0),
    inputUnits: numeric().notNull().default("0"),
    outputUnits: numeric().notNull().default("0"),
  },
  (t) => [unique("billing_usage_daily_key_uq").on(t.bucket, t.tenantId, t.modality, t.modelId, t.rateRule).nullsNotDistinct()],
);

/**
 * How far retention has removed raw rows: one row per scope (`*` for every project, or a project id
 * with a shorter horizon). Rows dated before `before` may be gone, so re-rating refuses such windows.
 */
export const retentionHorizons = pgTable("retention_horizons", {
  scope: text().primaryKey(),
  before: tstz().notNull(),
  updatedAt: tstz().notNull().default(sql`now()`),
});

/** One retention run (server worker or `voxgate retention apply`): what it removed, and how long it took. */
export const retentionRuns = pgTable("retention_runs", {
  id: bigserial({ mode: "number" }).primaryKey(),
  startedAt: tstz().notNull(),
  finishedAt: tstz().notNull(),
  durationMs: integer().notNull(),
  /** Rows removed per table (and per project for shorter horizons). */
  deleted: jsonb().notNull(),
});
