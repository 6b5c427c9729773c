import { bigint, pgTable, text, unique } from "drizzle-orm/pg-core";
import { tstz } from "./columns.js";

/**
 * Per (tenant, agent), a counter that ingest's session upsert bumps whenever it writes a session of the
 * agent that starts before today's UTC day (src/ingest/store-requests.ts): the only writes that can
 * change how many of the agent's sessions a running-totals span holds (spans end at a day start no later
 * than today; a session's start only moves earlier and its agent is set once). A span's cached session
 * count is valid while it was counted at the current version (src/fleet/page-counts.ts). No row: 0.
 * Same-day traffic never bumps it; sessions crossing midnight and late records do.
 */
export const fleetIndexAgentSessionVersions = pgTable(
  "fleet_index_agent_session_versions",
  {
    tenantId: text(),
    agentId: text().notNull(),
    version: bigint({ mode: "number" }).notNull().default(1),
  },
  (t) => [unique("fleet_index_agent_session_versions_key_uq").on(t.agentId, t.tenantId).nullsNotDistinct()],
);

/**
 * Per UTC day of `started_at` and (tenant, agent), the sessions retention removed (src/retention/apply.ts
 * moves them here in the statement that deletes them), so the fleet index's session counts over spans
 * reaching past the raw horizon keep their totals (src/fleet/page-counts.ts adds them to what is left).
 * Kept for the rollup horizon, like the agent rollups.
 */
export const fleetIndexAgentRetiredSessions = pgTable(
  "fleet_index_agent_retired_sessions",
  {
    day: tstz().notNull(),
    tenantId: text(),
    agentId: text().notNull(),
    sessions: bigint({ mode: "number" }).notNull(),
  },
  (t) => [unique("fleet_index_agent_retired_sessions_key_uq").on(t.agentId, t.tenantId, t.day).nullsNotDistinct()],
);
