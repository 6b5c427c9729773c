import { bigint, pgTable, text, unique } from "drizzle-orm/pg-core";
import { money, tstz } from "./columns.js";

// Per-agent running totals of the fleet index's ranking (src/rollups/fleet-checkpoints.ts): the sums
// of every request row and attributed turn dated before `at` (a UTC day start). A rolling window's
// per-agent totals are then one checkpoint minus another plus a day of rows and ≤ 12 edge hours:
// O(agents) rows a call instead of one day row per agent and day (docs/PERFORMANCE.md, fleet index).
// Built on demand for the days a query needs; writers of rows dated before a built `at` fold their
// deltas in (or, for a rebuild, drop the checkpoints), under the lock described there.

/** The days whose checkpoint rows are complete. */
export const fleetIndexCheckpoints = pgTable("fleet_index_checkpoints", {
  at: tstz().primaryKey(),
  builtAt: tstz().notNull().defaultNow(),
});

/** One row per (at, tenant, agent) with any row before `at`; none means zero. */
export const fleetIndexAgentCheckpoints = pgTable(
  "fleet_index_agent_checkpoints",
  {
    at: tstz().notNull(),
    tenantId: text(),
    agentId: text().notNull(),
    /** Request rows, probe included (the `requests` sort). */
    requests: bigint({ mode: "number" }).notNull().default(0),
    costUsd: money().notNull().default("0"),
    /** Request rows plus attributed turns (probe included): an agent is in a window when its count there is > 0. */
    rowCount: bigint({ mode: "number" }).notNull().default(0),
  },
  (t) => [unique("fleet_index_agent_checkpoints_key_uq").on(t.at, t.tenantId, t.agentId).nullsNotDistinct()],
);
