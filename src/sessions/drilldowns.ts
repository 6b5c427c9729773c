import { and, asc, eq } from "drizzle-orm";
import { ownedBy } from "../auth/context.js";
import type { Db } from "../db/client.js";
import { deadAirEvents, requests, turns } from "../db/schema/index.js";
import { moneyNumber } from "../money.js";
import { type SessionDbRow, sessionRow } from "./queries.js";

/**
 * The dashboard's session drill-downs (/api/sessions/{id}/turns|dead-air|transcript|replay).
 * Each takes a session row the caller was already allowed to read (findSessions), and reads only
 * rows of that session's own tenant: an operator looking at tenant b's session never sees rows
 * tenant a filed under the same session id.
 */

/** Most rows of one kind a drill-down returns; `truncated` says when a session has more. */
export const DRILLDOWN_ROWS_MAX = 5000;

export async function sessionTurns(db: Db, session: SessionDbRow) {
  const rows = await db
    .select()
    .from(turns)
    .where(and(eq(turns.sessionId, session.id), ownedBy(turns.tenantId, session.tenantId)))
    .orderBy(asc(turns.turnIndex))
    .limit(DRILLDOWN_ROWS_MAX);
  return rows.map((t) => ({
    seq: t.seq,
    turn_index: t.turnIndex,
    room_name: t.roomName,
    caller_speak_start_ms: t.callerSpeakStartMs,
    caller_speak_end_ms: t.callerSpeakEndMs,
    agent_speak_start_ms: t.agentSpeakStartMs,
    agent_speak_end_ms: t.agentSpeakEndMs,
    response_speed_ms: t.responseSpeedMs,
  }));
}

export async function sessionDeadAir(db: Db, session: SessionDbRow) {
  const rows = await db
    .select()
    .from(deadAirEvents)
    .where(and(eq(deadAirEvents.sessionId, session.id), ownedBy(deadAirEvents.tenantId, session.tenantId)))
    .orderBy(asc(deadAirEvents.startedAtMs))
    .limit(DRILLDOWN_ROWS_MAX);
  return rows.map((d) => ({
    started_at_ms: d.startedAtMs,
    duration_ms: d.durationMs,
    threshold_used_ms: d.thresholdUsedMs,
    room_name: d.roomName,
  }));
}

/**
 * The conversation as who-spoke-when. Voxgate stores no utterance text (plain-text transcripts
 * were a known gap in gateways like it), so every entry's `text` is null and `text_stored` false.
 */
export async function sessionTranscript(db: Db, session: SessionDbRow) {
  const ts = await sessionTurns(db, session);
  const entries = ts.flatMap((t) => {
    const caller = { turn_index: t.turn_index, speaker: "caller" as const, start_ms: t.caller_speak_start_ms, end_ms: t.caller_speak_end_ms, text: null };
    if (t.agent_speak_start_ms === null) return [caller];
    return [caller, { turn_index: t.turn_index, speaker: "agent" as const, start_ms: t.agent_speak_start_ms, end_ms: t.agent_speak_end_ms, text: null }];
  });
  return { session_id: session.id, text_stored: false, entries };
}

type ReplayEvent =
  | { at_ms: number; kind: "request"; id: string; modality: string; model_id: string; provider: string; status: string; ttfb_ms: number | null; total_latency_ms: number | null; cost_usd: number | null }
  | { at_ms: number; kind: "caller_speech" | "agent_speech"; turn_index: number; end_ms: number | null }
  | { at_ms: number; kind: "dead_air"; duration_ms: number; threshold_used_ms: number };

/** Everything that happened in the session on one epoch-ms time line, for the dashboard's replay. */
export async function sessionReplay(db: Db, session: SessionDbRow) {
  const [reqs, ts, dead] = await Promise.all([
    db
      .select()
      .from(requests)
      .where(and(eq(requests.sessionId, session.id), ownedBy(requests.tenantId, session.tenantId)))
      .orderBy(asc(requests.ts))
      .limit(DRILLDOWN_ROWS_MAX),
    sessionTurns(db, session),
    sessionDeadAir(db, session),
  ]);
  const events: ReplayEvent[] = [];
  for (const r of reqs) {
    events.push({
      at_ms: r.ts.getTime(),
      kind: "request",
      id: r.id,
      modality: r.modality,
      model_id: r.modelId,
      provider: r.provider,
      status: r.status,
      ttfb_ms: r.ttfbMs,
      total_latency_ms: r.totalLatencyMs,
      cost_usd: r.costUsd === null ? null : moneyNumber(r.costUsd),
    });
  }
  for (const t of ts) {
    events.push({ at_ms: t.caller_speak_start_ms, kind: "caller_speech", turn_index: t.turn_index, end_ms: t.caller_speak_end_ms });
    if (t.agent_speak_start_ms !== null) {
      events.push({ at_ms: t.agent_speak_start_ms, kind: "agent_speech", turn_index: t.turn_index, end_ms: t.agent_speak_end_ms });
    }
  }
  for (const d of dead) events.push({ at_ms: d.started_at_ms, kind: "dead_air", duration_ms: d.duration_ms, threshold_used_ms: d.threshold_used_ms });
  events.sort((x, y) => x.at_ms - y.at_ms);
  const truncated = reqs.length >= DRILLDOWN_ROWS_MAX || ts.length >= DRILLDOWN_ROWS_MAX || dead.length >= DRILLDOWN_ROWS_MAX;
  return { session: sessionRow(session), events, truncated };
}
