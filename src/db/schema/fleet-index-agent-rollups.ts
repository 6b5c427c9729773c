import { sql } from "drizzle-orm";
import { bigint, index, jsonb, pgTable, text, unique } from "drizzle-orm/pg-core";
import { money, tstz } from "./columns.js";

/**
 * What the fleet index's ranking computes per row (src/fleet/index-queries.ts, rank-sources.ts), as SQL
 * over a rollup or span row's own columns. The rank indexes keep these as expressions, and an index-only
 * scan hands the stored value over where the query has the identical expression (the text below is the
 * one both use), instead of computing it per row: numeric → bigint → float8 for cost is most of a row's
 * cost in the ranking (statement 19.7 → 17.7 ms for `today`, 16.4 → 13.2 ms for `all`, 10k agents).
 * Cost is ranked in whole units of 1e-10 USD: exact float8 sums below 2^53 units; numeric → bigint is
 * arithmetic where numeric → float8 prints and parses the number, so a row below $900M goes through
 * bigint (which would overflow at $922M) and larger rows take the float8 cast.
 */
export const RANK_EXPR = {
  costUnits: "CASE WHEN cost_usd < 900000000 THEN (cost_usd * 10000000000)::bigint::float8 ELSE (cost_usd * 10000000000)::float8 END",
  /** A rollup row's rows: requests and attributed turns, probe included. */
  rollupRows: "(requests + turns + probe_turns)::float8",
  /** A span row's rows (src/db/schema/fleet-index-checkpoints.ts). */
  spanRows: "row_count::float8",
} as const;

// Per-agent aggregates for GET /api/agents (src/fleet/index-queries.ts), the same two grains as the
// request rollups, plus calendar-month sums. One row per (bucket, tenant, agent): every modality's TTFB
// sketch is a column, so a fleet of 10k agents reads one row per agent and bucket. Probe traffic is
// counted (probe_requests, probe_turns) but never enters a sketch, errors or turns.
const agentSumColumns = () => ({
  bucket: tstz().notNull(),
  tenantId: text(),
  agentId: text().notNull(),
  /** Every request of the agent, probe included (as /api/costs counts them). */
  requests: bigint({ mode: "number" }).notNull().default(0),
  /** Of `requests`, the probe (load-test) ones. */
  probeRequests: bigint({ mode: "number" }).notNull().default(0),
  /** Non-probe requests with status error. */
  errors: bigint({ mode: "number" }).notNull().default(0),
  costUsd: money().notNull().default("0"),
  ratedPriceUsd: money().notNull().default("0"),
});

const turnColumns = () => ({
  /** Non-probe turns attributed to the agent (through their session). */
  turns: bigint({ mode: "number" }).notNull().default(0),
  probeTurns: bigint({ mode: "number" }).notNull().default(0),
});

const agentRollupColumns = () => ({
  ...agentSumColumns(),
  /** Non-probe TTFB sketches (src/stats/summary.ts), one per modality; null when empty. */
  sttTtfbHist: jsonb(),
  llmTtfbHist: jsonb(),
  ttsTtfbHist: jsonb(),
  ...turnColumns(),
  /** The non-probe turns' response-speed sketch. */
  responseHist: jsonb(),
});

export const fleetIndexAgentRollups = pgTable("fleet_index_agent_rollups", agentRollupColumns(), (t) => [
  unique("fleet_index_agent_rollups_key_uq").on(t.bucket, t.tenantId, t.agentId).nullsNotDistinct(),
  index("fleet_index_agent_rollups_agent_idx").on(t.agentId, t.bucket),
]);

export const fleetIndexAgentRollupsDaily = pgTable("fleet_index_agent_rollups_daily", agentRollupColumns(), (t) => [
  unique("fleet_index_agent_rollups_daily_key_uq").on(t.bucket, t.tenantId, t.agentId).nullsNotDistinct(),
  index("fleet_index_agent_rollups_daily_agent_idx").on(t.agentId, t.bucket),
  // Every column the ranking reads (src/fleet/index-queries.ts): it is then an index-only scan instead of
  // reading heap rows made wide by the sketches (~0.8 kB a day row at 1M requests): ~2x on `month`. Not
  // on the hourly table: its recent rows change with every batch, so their heap would be read anyway.
  // turns and probe_turns too: the ranking's row count (src/fleet/rank-sources.ts) reads them; and the
  // page's other sums, which running-totals spans are built from (src/rollups/fleet-checkpoints.ts):
  // without them a span built from 30 days of day rows read 280k heap rows (2.8 s instead of ~0.7).
  // Then the ranking's computed values (RANK_EXPR), read from the index instead of computed per row.
  index("fleet_index_agent_rollups_daily_rank_idx").on(
    t.bucket,
    t.tenantId,
    t.agentId,
    t.costUsd,
    t.requests,
    t.turns,
    t.probeTurns,
    t.probeRequests,
    t.errors,
    t.ratedPriceUsd,
    sql.raw(`(${RANK_EXPR.costUnits})`),
    sql.raw(`(${RANK_EXPR.rollupRows})`),
  ),
]);

// Calendar months (UTC; a bucket is the month's first instant), so `period=all` ranks and totals one row
// per agent and month instead of one per day. Ingest keeps the sums only: merging sketches would cost
// each batch as much as a day row's. The sketches of a closed month are a cache instead, merged from its
// day rows by the first page that shows the agent (src/fleet/month-sketches.ts) and valid while
// `sketched_rows` equals the row's count (requests + turns + probe_turns): a late row changes it.
export const fleetIndexAgentRollupsMonthly = pgTable(
  "fleet_index_agent_rollups_monthly",
  {
    ...agentSumColumns(),
    ...turnColumns(),
    sttTtfbHist: jsonb(),
    llmTtfbHist: jsonb(),
    ttsTtfbHist: jsonb(),
    responseHist: jsonb(),
    /** The row count the cached sketches were merged at; null: none cached. */
    sketchedRows: bigint({ mode: "number" }),
  },
  (t) => [
    unique("fleet_index_agent_rollups_monthly_key_uq").on(t.bucket, t.tenantId, t.agentId).nullsNotDistinct(),
    index("fleet_index_agent_rollups_monthly_agent_idx").on(t.agentId, t.bucket),
  ],
);
