import { sql } from "drizzle-orm";
import type { Db } from "../db/client.js";
import { deriveCallOutcome, type LegForDerivation } from "./derive.js";
import type { CallFacts, CallUpdate, LegFacts } from "./model.js";
import { jsonForStorage } from "./strings.js";

/**
 * The one write path for calls, legs and events, shared by the webhook and the observation flusher.
 * Every statement is an idempotent, order-independent upsert: earliest start/join, latest end/leave,
 * newest non-null descriptive field, a DISCONNECTED leg never goes back to ACTIVE. Replaying the same
 * update, or delivering updates in any order, converges on the same rows.
 */

/** recorded: written; duplicate: the event id was seen before (no-op); foreign: call owned by another tenant. */
export type ApplyResult = "recorded" | "duplicate" | "foreign";

export interface ApplyOptions {
  loadtestTrunks: ReadonlySet<string>;
}

/** Applies one update in its own transaction. */
export async function applyCallUpdate(db: Db, update: CallUpdate, opts: ApplyOptions): Promise<ApplyResult> {
  return db.transaction((tx) => applyInTransaction(tx as unknown as Db, update, opts));
}

export async function applyInTransaction(tx: Db, update: CallUpdate, opts: ApplyOptions): Promise<ApplyResult> {
  if (update.event) {
    const e = update.event;
    const inserted = await tx.execute(sql`
      insert into call_events (event_id, room_sid, event, participant_sid, track_sid, created_at_s, payload)
      values (${e.eventId}, ${update.call.roomSid}, ${e.event}, ${e.participantSid ?? null}, ${e.trackSid ?? null},
              ${e.createdAtS ?? null}, ${jsonForStorage(e.payload)}::jsonb)
      on conflict (event_id) do nothing
      returning event_id`);
    if (rowsOf(inserted).length === 0) return "duplicate";
  }

  if (!(await upsertCall(tx, update.call))) return "foreign";
  for (const leg of update.legs) await upsertLeg(tx, update.call.roomSid, leg);

  const legsChanged = update.legs.some((l) => l.kind !== undefined || l.disconnectReason !== undefined || l.attributes);
  if (legsChanged || update.call.origin === "loadgen") await refreshDerived(tx, update.call, opts);
  return "recorded";
}

/** Upserts the call row; false when the row belongs to another tenant (then nothing is changed). */
async function upsertCall(tx: Db, c: CallFacts): Promise<boolean> {
  const res = await tx.execute(sql`
    insert into calls (room_sid, room_name, tenant_id, origin, project, agent_id, attempt_id, run_id, started_at_ms, ended_at_ms)
    values (${c.roomSid}, ${c.roomName ?? null}, ${c.tenantId}, ${c.origin}, ${c.project ?? null}, ${c.agentId ?? null},
            ${c.attemptId ?? null}, ${c.runId ?? null}, ${c.startedAtMs ?? null}, ${c.endedAtMs ?? null})
    on conflict (room_sid) do update set
      room_name = coalesce(excluded.room_name, calls.room_name),
      tenant_id = coalesce(calls.tenant_id, excluded.tenant_id),
      origin = coalesce(calls.origin, excluded.origin),
      project = coalesce(excluded.project, calls.project),
      agent_id = coalesce(excluded.agent_id, calls.agent_id),
      attempt_id = coalesce(excluded.attempt_id, calls.attempt_id),
      run_id = coalesce(excluded.run_id, calls.run_id),
      started_at_ms = least(calls.started_at_ms, excluded.started_at_ms),
      ended_at_ms = greatest(calls.ended_at_ms, excluded.ended_at_ms),
      updated_at = now()
    where calls.tenant_id is null or excluded.tenant_id is null or calls.tenant_id = excluded.tenant_id
    returning room_sid`);
  return rowsOf(res).length > 0;
}

/** Upserts one leg; a participant sid already filed under another room is left alone. */
async function upsertLeg(tx: Db, roomSid: string, l: LegFacts): Promise<void> {
  const attributes = l.attributes ? jsonForStorage(l.attributes) : null;
  await tx.execute(sql`
    insert into call_legs (participant_sid, room_sid, identity, kind, state, joined_at_ms, left_at_ms, disconnect_reason,
                           first_audio_track_at_ms, audio_track_sid, audio_codec, attributes)
    values (${l.participantSid}, ${roomSid}, ${l.identity ?? null}, ${l.kind ?? null}, ${l.state ?? null},
            ${l.joinedAtMs ?? null}, ${l.leftAtMs ?? null}, ${l.disconnectReason ?? null}, ${l.firstAudioTrackAtMs ?? null},
            ${l.audioTrackSid ?? null}, ${l.audioCodec ?? null}, ${attributes}::jsonb)
    on conflict (participant_sid) do update set
      identity = coalesce(excluded.identity, call_legs.identity),
      kind = coalesce(nullif(excluded.kind, 'STANDARD'), call_legs.kind, excluded.kind),
      state = case when call_legs.state = 'DISCONNECTED' then call_legs.state
                   else coalesce(excluded.state, call_legs.state) end,
      joined_at_ms = least(call_legs.joined_at_ms, excluded.joined_at_ms),
      left_at_ms = greatest(call_legs.left_at_ms, excluded.left_at_ms),
      disconnect_reason = coalesce(nullif(excluded.disconnect_reason, 'UNKNOWN_REASON'), call_legs.disconnect_reason,
                                   excluded.disconnect_reason),
      audio_track_sid = case when ${FIRST_AUDIO_IS_NEW} then coalesce(excluded.audio_track_sid, call_legs.audio_track_sid)
                             else coalesce(call_legs.audio_track_sid, excluded.audio_track_sid) end,
      audio_codec = case when ${FIRST_AUDIO_IS_NEW} then coalesce(excluded.audio_codec, call_legs.audio_codec)
                         else coalesce(call_legs.audio_codec, excluded.audio_codec) end,
      first_audio_track_at_ms = least(call_legs.first_audio_track_at_ms, excluded.first_audio_track_at_ms),
      attributes = case when excluded.attributes is null then call_legs.attributes
                        when call_legs.attributes is null then excluded.attributes
                        -- the leaving snapshot is the final word, whichever arrives last
                        when call_legs.state = 'DISCONNECTED' and excluded.state is distinct from 'DISCONNECTED'
                          then excluded.attributes || call_legs.attributes
                        else call_legs.attributes || excluded.attributes end,
      updated_at = now()
    where call_legs.room_sid = excluded.room_sid`);
}

/** The incoming audio track is earlier than the stored one, so its sid/codec describe the first track. */
const FIRST_AUDIO_IS_NEW = sql.raw(
  "(excluded.first_audio_track_at_ms is not null and (call_legs.first_audio_track_at_ms is null or excluded.first_audio_track_at_ms < call_legs.first_audio_track_at_ms))",
);

/** Re-derives channel/end reason/trunk/probe from every stored leg of the room (deriveCallOutcome). */
async function refreshDerived(tx: Db, call: CallFacts, opts: ApplyOptions): Promise<void> {
  const legs = rowsOf<{ kind: string | null; disconnect_reason: string | null; left_at_ms: string | number | null; attributes: unknown }>(
    await tx.execute(sql`select kind, disconnect_reason, left_at_ms, attributes from call_legs where room_sid = ${call.roomSid}`),
  ).map(
    (r): LegForDerivation => ({
      kind: r.kind,
      disconnectReason: r.disconnect_reason,
      leftAtMs: r.left_at_ms === null ? null : Number(r.left_at_ms),
      attributes: r.attributes,
    }),
  );
  const outcome = deriveCallOutcome(legs, opts.loadtestTrunks);
  const probe = outcome.isProbeTrunk || call.origin === "loadgen";
  const updated = rowsOf<{ room_name: string | null; tenant_id: string | null; is_probe: boolean }>(
    await tx.execute(sql`
      update calls set
        channel = coalesce(${outcome.channel}, channel),
        end_reason = coalesce(${outcome.endReason}, end_reason),
        trunk_id = coalesce(${outcome.trunkId}, trunk_id),
        is_probe = is_probe or ${probe},
        updated_at = now()
      where room_sid = ${call.roomSid}
      returning room_name, tenant_id, is_probe`),
  );
  const row = updated[0];
  if (row?.is_probe && row.room_name) {
    // Requests recorded for a probe call's room are load-test traffic too (kept out of production percentiles).
    await tx.execute(sql`
      update requests set is_probe = true
      where room_name = ${row.room_name} and is_probe = false
        and (${row.tenant_id}::text is null or tenant_id = ${row.tenant_id})`);
  }
}

/** pg returns {rows}, PGlite returns {rows} too; both typed loosely by drizzle's execute. */
function rowsOf<T = Record<string, unknown>>(result: unknown): T[] {
  const rows = (result as { rows?: unknown }).rows;
  return Array.isArray(rows) ? (rows as T[]) : [];
}

/** Postgres data exception (22…) or integrity violation (23…): retrying the same write cannot succeed. */
export function isDataError(err: unknown): boolean {
  let e: unknown = err;
  for (let depth = 0; e && depth < 4; depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === "string" && /^2[23][0-9A-Z]{3}$/.test(code)) return true;
    e = (e as { cause?: unknown }).cause;
  }
  return false;
}
