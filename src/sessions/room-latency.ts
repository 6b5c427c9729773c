import { and, eq, inArray, isNotNull, ne, or, type SQL, sql } from "drizzle-orm";
import { type TenantScope, tenantCondition } from "../auth/context.js";
import { MODALITIES } from "../config/schema.js";
import type { Db } from "../db/client.js";
import { calls, deadAirEvents, requests, sessions, turns } from "../db/schema/index.js";
import { type LatencySummary, summarizeSamples } from "../stats/summary.js";
import { ROOM_TURNS_PAGE_MAX } from "./params.js";

/** Names of the `components` members: each an elapsed-ms summary of the whole call, or null. */
export const ROOM_COMPONENTS = ["stt_ttfb_ms", "llm_ttfb_ms", "tts_ttfb_ms", "dead_air_ms"] as const;
export type RoomComponents = Record<(typeof ROOM_COMPONENTS)[number], LatencySummary | null>;

export interface RoomTurn {
  seq: number;
  turn_index: number;
  session_id: string;
  caller_speak_end_ms: number;
  agent_speak_start_ms: number | null;
  response_speed_ms: number | null;
}

export interface RoomLatencyRecord {
  room: string;
  turns: RoomTurn[];
  turn_count: number;
  /** The seq to pass as since_turn for the next page, when more turns follow than one answer lists. */
  next_since_turn: number | null;
  components: RoomComponents;
  e2e_ms: LatencySummary | null;
  /** True when a call in this room is probe (load-test) traffic; its samples are then left out. */
  is_probe: boolean;
}

export interface RoomLatencyArgs extends TenantScope {
  room: string;
  sinceTurn?: number;
  /** Count probe traffic in the aggregates too (off by default, as for production percentiles). */
  includeProbe?: boolean;
}

/**
 * The room latency record, or null when the caller can see nothing of the room (unknown, or
 * another tenant's: the same null). A room's turns are turns naming the room, plus turns of any
 * session whose room is the room. Aggregates cover the whole call; since_turn narrows only `turns`.
 */
export async function roomLatency(db: Db, a: RoomLatencyArgs): Promise<RoomLatencyRecord | null> {
  // Sessions naming the room, then turns naming it or belonging to those sessions. Two indexed
  // lookups merged here rather than one OR, which Postgres can only answer by scanning every turn.
  const namedSessions = await db
    .select({ id: sessions.id })
    .from(sessions)
    .where(and(eq(sessions.roomName, a.room), tenantCondition(sessions.tenantId, a)));
  const turnColumns = {
    id: turns.id,
    seq: turns.seq,
    turnIndex: turns.turnIndex,
    sessionId: turns.sessionId,
    callerSpeakEndMs: turns.callerSpeakEndMs,
    agentSpeakStartMs: turns.agentSpeakStartMs,
    responseSpeedMs: turns.responseSpeedMs,
  };
  const turnTenant = tenantCondition(turns.tenantId, a);
  const [byRoom, bySession] = await Promise.all([
    db.select(turnColumns).from(turns).where(and(eq(turns.roomName, a.room), turnTenant)),
    namedSessions.length === 0
      ? Promise.resolve([])
      : db
          .select(turnColumns)
          .from(turns)
          .where(and(inArray(turns.sessionId, namedSessions.map((s) => s.id)), turnTenant)),
  ]);
  const unique = new Map(byRoom.map((t) => [t.id, t]));
  for (const t of bySession) unique.set(t.id, t);
  const allTurns = [...unique.values()].sort((x, y) => x.seq - y.seq || x.id - y.id);

  // Every session of the room: those naming it, and those whose turns name it.
  const sessionIds = new Set(namedSessions.map((s) => s.id));
  for (const t of allTurns) sessionIds.add(t.sessionId);

  const deadAirTenant = tenantCondition(deadAirEvents.tenantId, a);
  const deadAirColumns = { id: deadAirEvents.id, durationMs: deadAirEvents.durationMs };
  const [deadByRoom, deadBySession] = await Promise.all([
    db.select(deadAirColumns).from(deadAirEvents).where(and(eq(deadAirEvents.roomName, a.room), deadAirTenant)),
    sessionIds.size === 0
      ? Promise.resolve([])
      : db
          .select(deadAirColumns)
          .from(deadAirEvents)
          .where(and(inArray(deadAirEvents.sessionId, [...sessionIds]), deadAirTenant)),
  ]);
  const deadAir = [...new Map([...deadByRoom, ...deadBySession].map((d) => [d.id, d])).values()];

  if (allTurns.length === 0 && sessionIds.size === 0 && deadAir.length === 0 && !(await roomHasCall(db, a))) return null;

  const isProbe = await roomIsProbe(db, a);
  const countProbe = a.includeProbe === true || !isProbe;

  const ttfb = sessionIds.size > 0 ? await requestTtfbs(db, a, [...sessionIds], a.includeProbe === true) : [];
  const components = {} as RoomComponents;
  for (const m of MODALITIES) {
    components[`${m}_ttfb_ms`] = countProbe ? summarizeSamples(ttfb.filter((r) => r.modality === m).map((r) => r.ttfb)) : null;
  }
  components.dead_air_ms = countProbe ? summarizeSamples(deadAir.map((d) => d.durationMs)) : null;

  const e2e = countProbe
    ? summarizeSamples(allTurns.flatMap((t) => (t.responseSpeedMs === null ? [] : [t.responseSpeedMs])))
    : null;

  const since = a.sinceTurn ?? 0;
  const after = allTurns.filter((t) => t.seq > since);
  const page = after.slice(0, ROOM_TURNS_PAGE_MAX);
  const last = page.at(-1);
  return {
    room: a.room,
    turns: page.map((t) => ({
      seq: t.seq,
      turn_index: t.turnIndex,
      session_id: t.sessionId,
      caller_speak_end_ms: t.callerSpeakEndMs,
      agent_speak_start_ms: t.agentSpeakStartMs,
      response_speed_ms: t.responseSpeedMs,
    })),
    turn_count: allTurns.length,
    next_since_turn: after.length > page.length && last ? last.seq : null,
    components,
    e2e_ms: e2e,
    is_probe: isProbe,
  };
}

/** TTFB samples of the room's successful requests; probe-marked requests are left out unless asked. */
async function requestTtfbs(db: Db, scope: TenantScope, sessionIds: string[], includeProbe: boolean) {
  const where: (SQL | undefined)[] = [
    tenantCondition(requests.tenantId, scope),
    inArray(requests.sessionId, sessionIds),
    isNotNull(requests.ttfbMs),
    ne(requests.status, "error"),
  ];
  if (!includeProbe) where.push(eq(requests.isProbe, false));
  const rows = await db
    .select({ modality: requests.modality, ttfb: requests.ttfbMs })
    .from(requests)
    .where(and(...where));
  return rows.flatMap((r) => (r.ttfb === null ? [] : [{ modality: r.modality, ttfb: r.ttfb }]));
}

/** A call recorded for this room in the caller's tenant (a room that ran no inference is still known). */
async function roomHasCall(db: Db, a: TenantScope & { room: string }): Promise<boolean> {
  const [row] = await db
    .select({ one: sql<number>`1` })
    .from(calls)
    .where(and(eq(calls.roomName, a.room), tenantCondition(calls.tenantId, a)))
    .limit(1);
  return row !== undefined;
}

/**
 * Whether a call of this room is marked probe (a load-test trunk). Webhook-recorded calls carry no
 * tenant, so a tenant's room also matches tenant-less calls: this only ever hides samples.
 */
async function roomIsProbe(db: Db, a: TenantScope & { room: string }): Promise<boolean> {
  const tenant = a.tenantId === null ? undefined : or(sql`${calls.tenantId} is null`, tenantCondition(calls.tenantId, a));
  const [row] = await db
    .select({ one: sql<number>`1` })
    .from(calls)
    .where(and(eq(calls.roomName, a.room), eq(calls.isProbe, true), tenant))
    .limit(1);
  return row !== undefined;
}
