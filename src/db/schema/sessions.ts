import { sql } from "drizzle-orm";
import { index, integer, pgTable, text, unique } from "drizzle-orm/pg-core";
import { money, tstz } from "./columns.js";

/**
 * A conversation: the session_id minted by the agent-side gateway; upserted by ingest. Session ids
 * are unique per tenant ((id, tenant_id), NULL = the operator's rows as one more tenant): two tenants
 * using one id have two sessions, never a shared one.
 */
export const sessions = pgTable(
  "sessions",
  {
    id: text().notNull(),
    tenantId: text(),
    project: text().notNull().default("default"),
    roomName: text(),
    agentId: text(),
    startedAt: tstz().notNull(),
    endedAt: tstz().notNull(),
    modalities: text().array().notNull().default(sql`'{}'::text[]`),
    requestCount: integer().notNull().default(0),
    totalCostUsd: money().notNull().default("0"),
    updatedAt: tstz().notNull().default(sql`now()`),
  },
  (t) => [
    unique("sessions_id_tenant_uq").on(t.id, t.tenantId).nullsNotDistinct(),
    index("sessions_tenant_started_idx").on(t.tenantId, t.startedAt),
    index("sessions_started_idx").on(t.startedAt),
    index("sessions_room_idx").on(t.roomName),
    // GET /api/agents counts a page of agents' sessions in the window; tenant_id in the key makes it
    // an index-only scan (~100k sessions for 100 agents' year: 40 -> 17 ms measured at 10M rows).
    index("sessions_agent_started_idx").on(t.agentId, t.startedAt, t.tenantId),
  ],
);
