import { bigint, bigserial, doublePrecision, index, integer, pgTable, text, unique } from "drizzle-orm/pg-core";
import { tstz } from "./columns.js";

/** The latest heartbeat of each agent worker; the roster is rows seen in the last 45 s. */
export const agentPresence = pgTable(
  "agent_presence",
  {
    id: bigserial({ mode: "number" }).primaryKey(),
    tenantId: text(),
    agentId: text().notNull(),
    agentName: text(),
    dispatchName: text(),
    status: text(),
    activeSessions: integer(),
    version: text(),
    project: text(),
    region: text(),
    host: text(),
    startedAt: tstz(),
    memoryRssBytes: bigint({ mode: "number" }),
    memoryTotalBytes: bigint({ mode: "number" }),
    cpuPct: doublePrecision(),
    /** The agent's own clock, as reported. */
    ts: tstz(),
    /** The collector's clock: ageing is measured against this, never the agent's. */
    lastSeenAt: tstz().notNull(),
  },
  (t) => [
    unique("agent_presence_agent_uq").on(t.tenantId, t.agentId).nullsNotDistinct(),
    index("agent_presence_seen_idx").on(t.lastSeenAt),
    // GET /api/agents reads a page of agents' presence by agent id alone (the operator spans tenants).
    index("agent_presence_agent_idx").on(t.agentId),
  ],
);
