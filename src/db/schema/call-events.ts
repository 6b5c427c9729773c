import { sql } from "drizzle-orm";
import { bigint, index, jsonb, pgTable, primaryKey, text } from "drizzle-orm/pg-core";
import { tstz } from "./columns.js";

/**
 * Raw LiveKit webhook events; the event id (EV_…) makes replays no-ops. Partitioned by day on
 * created_at_s (the event's own time, which a replay repeats; the server's second when LiveKit sent
 * none) in the migration SQL (0027_day_partitions), so the key is (event_id, created_at_s).
 */
export const callEvents = pgTable(
  "call_events",
  {
    eventId: text().notNull(),
    roomSid: text(),
    event: text().notNull(),
    participantSid: text(),
    trackSid: text(),
    createdAtS: bigint({ mode: "number" }).notNull(),
    payload: jsonb(),
    receivedAt: tstz().notNull().default(sql`now()`),
  },
  (t) => [primaryKey({ columns: [t.eventId, t.createdAtS] }), index("call_events_room_idx").on(t.roomSid)],
);
