import { sql } from "drizzle-orm";
import { index, integer, pgTable, text } from "drizzle-orm/pg-core";
import { money, tstz } from "./columns.js";

/** A conversation: the session_id minted by the agent-side gateway; upserted by ingest. */
export const sessions = pgTable(
  "sessions",
  {
    id: text().primaryKey(),
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
    index("sessions_tenant_started_idx").on(t.tenantId, t.startedAt),
    index("sessions_started_idx").on(t.startedAt),
    index("sessions_room_idx").on(t.roomName),
  ],
);
