import { sql } from "drizzle-orm";
import { bigint, index, jsonb, pgTable, text } from "drizzle-orm/pg-core";
import { tstz } from "./columns.js";

/** Raw LiveKit webhook events; the event id (EV_…) makes replays no-ops. */
export const callEvents = pgTable(
  "call_events",
  {
    eventId: text().primaryKey(),
    roomSid: text(),
    event: text().notNull(),
    participantSid: text(),
    trackSid: text(),
    createdAtS: bigint({ mode: "number" }),
    payload: jsonb(),
    receivedAt: tstz().notNull().default(sql`now()`),
  },
  (t) => [index("call_events_room_idx").on(t.roomSid)],
);
