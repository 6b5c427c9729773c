import { doublePrecision, integer, pgTable, primaryKey, text } from "drizzle-orm/pg-core";
import { tstz } from "./columns.js";

/**
 * Fleet-wide requests-per-minute budget of each provider (rate_limiting.<provider>.requests_per_minute):
 * one row per provider and calendar minute; replicas claim tokens from it in batches, and the sum of
 * claims never passes the limit (src/gateway/fleet-limiter.ts).
 */
export const gatewayRateWindows = pgTable(
  "gateway_rate_windows",
  {
    providerId: text().notNull(),
    windowStart: tstz().notNull(),
    granted: integer().notNull(),
    /** Tokens handed out by the last claim (what the claiming replica got). */
    lastClaim: integer().notNull(),
  },
  (t) => [primaryKey({ columns: [t.providerId, t.windowStart] })],
);

/**
 * Concurrent-stream slots each replica holds per provider (rate_limiting.<provider>.concurrent_streams):
 * live rows (expires_at ahead) of all replicas never add up past the cap; a replica that dies lets its
 * slots lapse at expires_at.
 */
export const gatewayStreamLeases = pgTable(
  "gateway_stream_leases",
  {
    providerId: text().notNull(),
    replicaId: text().notNull(),
    slots: integer().notNull(),
    expiresAt: tstz().notNull(),
  },
  (t) => [primaryKey({ columns: [t.providerId, t.replicaId] })],
);

/**
 * Budget a replica holds for running work of a `block` project (stream increments, HTTP estimates not
 * yet recorded): a claim under an advisory lock is granted only while the project's recorded spend plus
 * every replica's live holding is under its daily budget (src/gateway/budget-leases.ts). A replica
 * that dies lets its holding lapse at expires_at.
 */
export const gatewayBudgetLeases = pgTable(
  "gateway_budget_leases",
  {
    projectId: text().notNull(),
    replicaId: text().notNull(),
    amountUsd: doublePrecision().notNull(),
    expiresAt: tstz().notNull(),
  },
  (t) => [primaryKey({ columns: [t.projectId, t.replicaId] })],
);
