import { sql } from "drizzle-orm";
import { bigint, index, jsonb, pgTable, text } from "drizzle-orm/pg-core";
import { tstz } from "./columns.js";

/** One participant of a call (SIP caller, agent, browser user), keyed on participant sid. */
export const callLegs = pgTable(
  "call_legs",
  {
    participantSid: text().primaryKey(),
    roomSid: text().notNull(),
    identity: text(),
    kind: text(),
    state: text(),
    joinedAtMs: bigint({ mode: "number" }),
    leftAtMs: bigint({ mode: "number" }),
    disconnectReason: text(),
    firstAudioTrackAtMs: bigint({ mode: "number" }),
    audioTrackSid: text(),
    audioCodec: text(),
    attributes: jsonb(),
    updatedAt: tstz().notNull().default(sql`now()`),
  },
  (t) => [index("call_legs_room_idx").on(t.roomSid)],
);
