import { sql } from "drizzle-orm";
import { bigint, index, jsonb, pgTable, primaryKey, text, unique } from "drizzle-orm/pg-core";
import { money, tstz } from "./columns.js";
import { RANK_EXPR } from "./fleet-index-agent-rollups.js";

// Per-agent running totals of the fleet index (src/rollups/fleet-checkpoints.ts): the sums
// of every request row and attributed turn dated in [from_at, at), from a UTC hour start (-infinity:
// everything before `at`) to a UTC day start. A rolling window's per-agent totals are then one such span
// plus today's day rows and the raw rows of its first partial hour: O(agents) rows a call instead of one
// day row per agent and day
// (docs/PERFORMANCE.md, fleet index). Built on demand for the spans a query needs; writers of rows
// dated inside a built span fold their deltas in (or, for a rebuild, drop the spans), under the lock
// described there.

/** -infinity: a span with no lower bound. */
const unbounded = sql`'-infinity'::timestamptz`;

/** The spans whose checkpoint rows are complete. */
export const fleetIndexCheckpoints = pgTable(
  "fleet_index_checkpoints",
  {
    fromAt: tstz().notNull().default(unbounded),
    at: tstz().notNull(),
    builtAt: tstz().notNull().defaultNow(),
  },
  (t) => [primaryKey({ columns: [t.fromAt, t.at] })],
);

/** One row per (span, tenant, agent) with any row in the span; none means zero. */
export const fleetIndexAgentCheckpoints = pgTable(
  "fleet_index_agent_checkpoints",
  {
    fromAt: tstz().notNull().default(unbounded),
    at: tstz().notNull(),
    tenantId: text(),
    agentId: text().notNull(),
    /** Request rows, probe included (the `requests` sort). */
    requests: bigint({ mode: "number" }).notNull().default(0),
    costUsd: money().notNull().default("0"),
    /** Request rows plus attributed turns (probe included): an agent is in a window when its count there is > 0. */
    rowCount: bigint({ mode: "number" }).notNull().default(0),
    // The page's other totals, as the rollups keep them (src/db/schema/fleet-index-agent-rollups.ts).
    probeRequests: bigint({ mode: "number" }).notNull().default(0),
    errors: bigint({ mode: "number" }).notNull().default(0),
    ratedPriceUsd: money().notNull().default("0"),
    turns: bigint({ mode: "number" }).notNull().default(0),
    probeTurns: bigint({ mode: "number" }).notNull().default(0),
    // The span's latency sketches, a cache like the monthly rows' (src/fleet/span-sketches.ts): merged
    // by the first page that shows the agent, valid while `sketched_rows` equals `row_count` (a late
    // row folded in changes it). Builders and folds never write them.
    sttTtfbHist: jsonb(),
    llmTtfbHist: jsonb(),
    ttsTtfbHist: jsonb(),
    responseHist: jsonb(),
    /** The row count the cached sketches were merged at; null: none cached. */
    sketchedRows: bigint({ mode: "number" }),
    // The agent's sessions started in the span, a cache like the sketches' (src/fleet/page-counts.ts):
    // counted by the first page that shows the agent, valid while `sessions_version` equals the agent's
    // version in fleet_index_agent_session_versions (0 when it has none). Builders and folds never write it.
    sessions: bigint({ mode: "number" }),
    sessionsVersion: bigint({ mode: "number" }),
  },
  // agent before tenant: a page reads its 100 agents of a span as 100 index probes; with tenant second
  // (unconstrained for an operator key) `agent_id = ANY(…)` was a filter over the span's 10k rows (18 ms).
  (t) => [
    unique("fleet_index_agent_checkpoints_span_key_uq").on(t.fromAt, t.at, t.agentId, t.tenantId).nullsNotDistinct(),
    // The ranking reads a span's 10k rows: index-only, with its computed values (RANK_EXPR) stored, so
    // neither the heap row nor the numeric → float8 conversion is touched per row.
    index("fleet_index_agent_checkpoints_rank_idx").on(
      t.fromAt,
      t.at,
      t.tenantId,
      t.agentId,
      t.costUsd,
      t.requests,
      t.rowCount,
      sql.raw(`(${RANK_EXPR.costUnits})`),
      sql.raw(`(${RANK_EXPR.spanRows})`),
    ),
  ],
);
