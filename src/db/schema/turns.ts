import { sql } from "drizzle-orm";
import { bigint, bigserial, index, integer, pgTable, primaryKey, text, unique } from "drizzle-orm/pg-core";
import { tstz } from "./columns.js";

/**
 * One conversational turn (caller speaks, agent answers). Idempotent on (session_id, turn_index) within
 * a tenant, for a re-send with the same start time. Partitioned by day on caller_speak_start_ms (epoch
 * ms) in the migration SQL (0027_day_partitions), so the keys hold the partition key.
 */
export const turns = pgTable(
  "turns",
  {
    id: bigserial({ mode: "number" }).notNull(),
    tenantId: text(),
    sessionId: text().notNull(),
    roomName: text(),
    turnIndex: integer().notNull(),
    /** Room-wide arrival position, assigned by the collector (see room_sequences). */
    seq: bigint({ mode: "number" }).notNull(),
    callerSpeakStartMs: bigint({ mode: "number" }).notNull(),
    callerSpeakEndMs: bigint({ mode: "number" }).notNull(),
    agentSpeakStartMs: bigint({ mode: "number" }),
    agentSpeakEndMs: bigint({ mode: "number" }),
    responseSpeedMs: integer(),
    /** The session's agent, stamped when the turn is folded into the per-agent rollups (null until then). */
    agentId: text(),
    createdAt: tstz().notNull().default(sql`now()`),
  },
  (t) => [
    primaryKey({ columns: [t.id, t.callerSpeakStartMs] }),
    unique("turns_session_turn_start_tenant_uq").on(t.sessionId, t.turnIndex, t.callerSpeakStartMs, t.tenantId).nullsNotDistinct(),
    // GET /v1/rooms/{room}/latency (src/sessions/room-latency.ts), the one read of turns by room: by
    // name alone for an operator, by name and tenant for a tenant key (the tenant a filter over the
    // name's few rows). A (tenant_id, room_name, seq) index served only the second and cost every turn
    // insert one more index entry: dropped (migration 0029).
    index("turns_room_name_seq_idx").on(t.roomName, t.seq),
    // GET /api/agents reads the edge hours of a page of agents' turns (agent_id = ANY(...): the
    // predicate is implied). Unattributed turns are left out, so no plan can reach them through an
    // `agent_id IS NULL` range here: attachTurns' UPDATE did, with statistics taken while every turn
    // had its agent, and read every unattributed turn of the partition per batch (migration 0030).
    index("turns_agent_start_idx").on(t.agentId, t.callerSpeakStartMs).where(sql`${t.agentId} IS NOT NULL`),
    // attachTurns (src/rollups/fleet-index.ts): a batch's sessions' unattributed turns, a probe per
    // session and partition into an index that holds only the turns still waiting for their agent.
    index("turns_unattributed_session_idx").on(t.sessionId).where(sql`${t.agentId} IS NULL`),
    // GET /api/agents totals every agent's turns of the window's partial edge hours: a range on the
    // start time alone (a full scan without it: ~1 s of 1.9 s at 1M rows, docs/PERFORMANCE.md).
    index("turns_attributed_start_idx").on(t.callerSpeakStartMs).where(sql`${t.agentId} IS NOT NULL`),
  ],
);

/** Per-room counter that hands out turn `seq` values in arrival order. */
export const roomSequences = pgTable(
  "room_sequences",
  {
    id: bigserial({ mode: "number" }).primaryKey(),
    tenantId: text(),
    roomName: text().notNull(),
    lastSeq: bigint({ mode: "number" }).notNull().default(0),
  },
  (t) => [unique("room_sequences_room_uq").on(t.tenantId, t.roomName).nullsNotDistinct()],
);
