import { sql } from "drizzle-orm";
import { bigint, boolean, index, pgTable, text } from "drizzle-orm/pg-core";
import { tstz } from "./columns.js";

/** A phone/WebRTC call, keyed on the LiveKit room sid; written by the webhook and observations. */
export const calls = pgTable(
  "calls",
  {
    roomSid: text().primaryKey(),
    roomName: text(),
    tenantId: text(),
    project: text(),
    agentId: text(),
    attemptId: text(),
    runId: text(),
    /** webhook | agent | loadgen: who first told us about the call. */
    origin: text(),
    /** Derived from the legs: sip when a SIP leg exists, else webrtc. */
    channel: text(),
    /** Derived from the SIP leg's disconnect reason. */
    endReason: text(),
    trunkId: text(),
    isProbe: boolean().notNull().default(false),
    startedAtMs: bigint({ mode: "number" }),
    endedAtMs: bigint({ mode: "number" }),
    createdAt: tstz().notNull().default(sql`now()`),
    updatedAt: tstz().notNull().default(sql`now()`),
  },
  (t) => [
    index("calls_tenant_started_idx").on(t.tenantId, t.startedAtMs),
    index("calls_room_name_idx").on(t.roomName),
    index("calls_attempt_idx").on(t.attemptId),
    // GET /api/agents counts a page of agents' calls in the window (index-only: tenant and probe in the key).
    index("calls_agent_started_idx").on(t.agentId, t.startedAtMs, t.tenantId, t.isProbe),
  ],
);
