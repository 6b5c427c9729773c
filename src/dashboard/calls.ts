import { and, desc, eq, inArray, lt, or, sql } from "drizzle-orm";
import { z } from "zod";
import { type TenantScope, tenantCondition } from "../auth/context.js";
import type { Db } from "../db/client.js";
import { callLegs, calls } from "../db/schema/index.js";
import { DomainError } from "../errors.js";
import type { CallDetail, CallLeg, CallRow } from "./schemas.js";

export const CALL_LIST_LIMIT_MAX = 500;
export const CALL_LIST_LIMIT_DEFAULT = 100;

export const callListQuery = z.object({
  limit: z
    .string()
    .regex(/^\d+$/, "must be an integer")
    .transform(Number)
    .pipe(z.number().int().min(1).max(CALL_LIST_LIMIT_MAX))
    .optional()
    .transform((v) => v ?? CALL_LIST_LIMIT_DEFAULT),
  /** Epoch ms: calls that started before it (pass back the oldest `started_at_ms` seen). */
  before: z
    .string()
    .regex(/^\d{1,15}$/, "must be epoch milliseconds")
    .transform(Number)
    .optional(),
});

/** The answers' types are the schemas' (src/dashboard/schemas.ts). */
export type { CallDetail, CallLeg, CallRow } from "./schemas.js";

type CallDb = typeof calls.$inferSelect;
type LegDb = typeof callLegs.$inferSelect;

function legView(l: LegDb): CallLeg {
  return {
    participant_sid: l.participantSid,
    identity: l.identity,
    kind: l.kind,
    state: l.state,
    joined_at_ms: l.joinedAtMs,
    left_at_ms: l.leftAtMs,
    disconnect_reason: l.disconnectReason,
    first_audio_track_at_ms: l.firstAudioTrackAtMs,
    audio_codec: l.audioCodec,
  };
}

function callView(c: CallDb, legs: LegDb[]): CallRow {
  const reasons = [...new Set(legs.map((l) => l.disconnectReason).filter((r): r is string => r !== null && r !== ""))].sort();
  return {
    room_sid: c.roomSid,
    room_name: c.roomName,
    tenant_id: c.tenantId,
    project: c.project,
    agent_id: c.agentId,
    origin: c.origin,
    channel: c.channel,
    end_reason: c.endReason,
    trunk_id: c.trunkId,
    is_probe: c.isProbe,
    started_at_ms: c.startedAtMs,
    ended_at_ms: c.endedAtMs,
    leg_count: legs.length,
    disconnect_reasons: reasons,
  };
}

/** Calls (LiveKit rooms) newest first, within the caller's tenant, with their legs' summary. */
export async function listCalls(db: Db, scope: TenantScope, q: { limit: number; before?: number | undefined }): Promise<CallRow[]> {
  const started = sql`coalesce(${calls.startedAtMs}, 0)`;
  const rows = await db
    .select()
    .from(calls)
    .where(and(tenantCondition(calls.tenantId, scope), q.before === undefined ? undefined : lt(started, q.before)))
    .orderBy(desc(started), desc(calls.roomSid))
    .limit(q.limit);
  if (rows.length === 0) return [];
  const legs = await db.select().from(callLegs).where(inArray(callLegs.roomSid, rows.map((r) => r.roomSid)));
  return rows.map((r) => callView(r, legs.filter((l) => l.roomSid === r.roomSid)));
}

/** One call with its legs; another tenant's call answers like a missing one. */
export async function callDetail(db: Db, scope: TenantScope, ref: string): Promise<CallDetail> {
  const [call] = await db
    .select()
    .from(calls)
    .where(and(tenantCondition(calls.tenantId, scope), or(eq(calls.roomSid, ref), eq(calls.roomName, ref))))
    .orderBy(desc(sql`coalesce(${calls.startedAtMs}, 0)`))
    .limit(1);
  if (!call) throw new DomainError("not_found", `no call ${ref}`);
  const legs = await db.select().from(callLegs).where(eq(callLegs.roomSid, call.roomSid)).orderBy(callLegs.joinedAtMs);
  return { ...callView(call, legs), legs: legs.map(legView) };
}
