import { sql } from "drizzle-orm";
import { bigint, bigserial, index, integer, pgTable, primaryKey, text, unique } from "drizzle-orm/pg-core";
import { tstz } from "./columns.js";

/**
 * A stretch of silence on a call. Idempotent on (session_id, started_at_ms) within a tenant.
 * Partitioned by day on started_at_ms (epoch ms) in the migration SQL (0027_day_partitions).
 */
export const deadAirEvents = pgTable(
  "dead_air_events",
  {
    id: bigserial({ mode: "number" }).notNull(),
    tenantId: text(),
    sessionId: text().notNull(),
    roomName: text(),
    startedAtMs: bigint({ mode: "number" }).notNull(),
    durationMs: integer().notNull(),
    thresholdUsedMs: integer().notNull(),
    createdAt: tstz().notNull().default(sql`now()`),
  },
  (t) => [
    primaryKey({ columns: [t.id, t.startedAtMs] }),
    unique("dead_air_session_start_tenant_uq").on(t.sessionId, t.startedAtMs, t.tenantId).nullsNotDistinct(),
    index("dead_air_room_idx").on(t.tenantId, t.roomName),
    // Operators (no tenant) look a room up by name alone: GET /v1/rooms/{room}/latency.
    index("dead_air_room_name_idx").on(t.roomName),
  ],
);
