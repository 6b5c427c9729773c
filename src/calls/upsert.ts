import { sql } from "drizzle-orm";
import { type Db, rowsOf } from "../db/client.js";
import { executeNamed } from "../db/named.js";
import { type CallOutcome, deriveCallOutcome, type LegForDerivation } from "./derive.js";
import type { CallUpdate } from "./model.js";
import { jsonForStorage } from "./strings.js";

/**
 * The one write path for calls, legs and events, shared by the webhook and the observation flusher.
 * Every statement is an idempotent, order-independent upsert: earliest start/join, latest end/leave,
 * newest non-null descriptive field, a DISCONNECTED leg never goes back to ACTIVE. Replaying the same
 * update, or delivering updates in any order, converges on the same rows.
 *
 * Event, call and legs are written by ONE statement (data-modifying CTEs: atomic, one round trip) that
 * also returns every leg of the room as stored afterwards; channel/end reason/trunk/probe are then
 * derived in TypeScript (deriveCallOutcome) and written only when they change. Updates that can change
 * them run both statements in one transaction.
 */

/** recorded: written; duplicate: the event id was seen before (no-op); foreign: call owned by another tenant. */
export type ApplyResult = "recorded" | "duplicate" | "foreign";

export interface ApplyOptions {
  loadtestTrunks: ReadonlySet<string>;
}

export async function applyCallUpdate(db: Db, update: CallUpdate, opts: ApplyOptions): Promise<ApplyResult> {
  if (!mayChangeDerived(update)) return applyInTransaction(db, update, opts);
  return db.transaction((tx) => applyInTransaction(tx as unknown as Db, update, opts));
}

/**
 * Applies several updates in ONE transaction (one commit, one WAL flush for all): how the webhook's
 * group commit and the observation flusher write. Rows are locked in room order so two concurrent
 * batches cannot deadlock. Results come back in the order given. A failure rolls the whole batch back.
 */
export async function applyCallUpdates(db: Db, updates: readonly CallUpdate[], opts: ApplyOptions): Promise<ApplyResult[]> {
  if (updates.length === 1 && updates[0]) return [await applyCallUpdate(db, updates[0], opts)];
  const order = updates.map((u, i) => ({ u, i })).sort((a, b) => (a.u.call.roomSid < b.u.call.roomSid ? -1 : a.u.call.roomSid > b.u.call.roomSid ? 1 : a.i - b.i));
  const results: ApplyResult[] = new Array(updates.length);
  await db.transaction(async (tx) => {
    for (const chunk of chunksOf(order)) {
      const only = chunk[0];
      if (chunk.length === 1 && only) results[only.i] = await applyInTransaction(tx as unknown as Db, only.u, opts);
      else await applyChunk(tx as unknown as Db, chunk, results, opts);
    }
  });
  return results;
}

/**
 * Splits updates (already in room order) into runs that touch disjoint rows: no room, participant or
 * event id twice in a run. Such a run is written by ONE statement (applyChunk) with the same result as
 * writing its updates one by one. Run k holds (about) the k-th update of every room, so a room's updates
 * keep their order and every room is first locked in run 1, in room order: concurrent batches cannot deadlock.
 */
function chunksOf(order: readonly { u: CallUpdate; i: number }[]): { u: CallUpdate; i: number }[][] {
  const chunks: { u: CallUpdate; i: number }[][] = [];
  const keys: Set<string>[] = [];
  let room: string | undefined;
  let next = 0;
  for (const item of order) {
    if (item.u.call.roomSid !== room) {
      room = item.u.call.roomSid;
      next = 0;
    }
    const mine = [`r:${room}`, ...item.u.legs.map((l) => `p:${l.participantSid}`)];
    if (item.u.event) mine.push(`e:${item.u.event.eventId}`);
    let k = next;
    while (keys[k] && mine.some((key) => keys[k]?.has(key))) k++;
    if (!chunks[k]) {
      chunks[k] = [];
      keys[k] = new Set();
    }
    chunks[k]?.push(item);
    for (const key of mine) keys[k]?.add(key);
    next = k + 1;
  }
  return chunks;
}

/** Writes updates that touch disjoint rows with one statement, then derives each one as applyInTransaction does. */
async function applyChunk(db: Db, chunk: readonly { u: CallUpdate; i: number }[], results: ApplyResult[], opts: ApplyOptions): Promise<void> {
  const events: string[] = [];
  const legs: unknown[] = [];
  for (const [n, { u }] of chunk.entries()) {
    const c = u.call;
    const e = u.event;
    const head = JSON.stringify({
      n,
      has_event: e !== undefined,
      event_id: e?.eventId ?? null,
      event: e?.event ?? null,
      participant_sid: e?.participantSid ?? null,
      track_sid: e?.trackSid ?? null,
      created_at_s: e?.createdAtS ?? null,
      room_sid: c.roomSid,
      room_name: c.roomName ?? null,
      tenant_id: c.tenantId,
      origin: c.origin,
      project: c.project ?? null,
      agent_id: c.agentId ?? null,
      attempt_id: c.attemptId ?? null,
      run_id: c.runId ?? null,
      started_at_ms: c.startedAtMs ?? null,
      ended_at_ms: c.endedAtMs ?? null,
    });
    events.push(`${head.slice(0, -1)},"payload":${e ? jsonForStorage(e.payload) : "null"}}`);
    for (const l of u.legs) {
      legs.push({ n, room_sid: c.roomSid, ...legRow(l) });
    }
  }
  const result = await executeNamed(db, GROUP_UPSERT_STATEMENT_NAME, sql`
    with src as (
      select * from jsonb_to_recordset(${`[${events.join(",")}]`}::jsonb) as x(
        n int, has_event boolean, event_id text, event text, participant_sid text, track_sid text, created_at_s bigint,
        payload jsonb, room_sid text, room_name text, tenant_id text, origin text, project text, agent_id text,
        attempt_id text, run_id text, started_at_ms bigint, ended_at_ms bigint)
    ),
    ev as (
      insert into call_events (event_id, room_sid, event, participant_sid, track_sid, created_at_s, payload)
      select event_id, room_sid, event, participant_sid, track_sid, ${EVENT_SECOND}, payload from src where has_event
      order by n
      on conflict (event_id, created_at_s) do nothing
      returning event_id
    ),
    fresh as (
      select src.*, (not has_event or exists (select 1 from ev where ev.event_id = src.event_id)) as ok from src
    ),
    c as (
      insert into calls (room_sid, room_name, tenant_id, origin, project, agent_id, attempt_id, run_id, started_at_ms, ended_at_ms)
      select room_sid, room_name, tenant_id, origin, project, agent_id, attempt_id, run_id, started_at_ms, ended_at_ms
      from fresh where ok
      order by n
      ${CALL_MERGE}
      returning room_sid, room_name, tenant_id, channel, end_reason, trunk_id, is_probe
    ),
    l as (
      insert into call_legs (participant_sid, room_sid, identity, kind, state, joined_at_ms, left_at_ms, disconnect_reason,
                             first_audio_track_at_ms, audio_track_sid, audio_codec, attributes)
      select x.participant_sid, x.room_sid, x.identity, x.kind, x.state, x.joined_at_ms, x.left_at_ms, x.disconnect_reason,
             x.first_audio_track_at_ms, x.audio_track_sid, x.audio_codec, x.attributes
      from jsonb_to_recordset(${jsonForStorage(legs)}::jsonb) as x(
        n int, room_sid text, participant_sid text, identity text, kind text, state text, joined_at_ms bigint, left_at_ms bigint,
        disconnect_reason text, first_audio_track_at_ms bigint, audio_track_sid text, audio_codec text, attributes jsonb)
      where x.room_sid in (select room_sid from c)
      order by x.n
      ${LEG_MERGE}
      returning room_sid, participant_sid, kind, disconnect_reason, left_at_ms, attributes
    )
    select f.n, f.ok as fresh,
           (select row_to_json(c) from c where c.room_sid = f.room_sid) as call,
           (select coalesce(json_agg(s), '[]'::json) from (
              select kind, disconnect_reason, left_at_ms, attributes from l where l.room_sid = f.room_sid
              union all
              select kind, disconnect_reason, left_at_ms, attributes from call_legs
              where call_legs.room_sid = f.room_sid and participant_sid not in (select participant_sid from l)
           ) s) as legs
    from fresh f
    order by f.n`);

  const rows = rowsOf<{ n: number; fresh: boolean; call: StoredCall | null; legs: StoredLeg[] }>(result);
  for (const row of rows) {
    const item = chunk[row.n];
    if (!item) continue;
    const { u, i } = item;
    if (!row.fresh) results[i] = "duplicate";
    else if (!row.call) results[i] = "foreign";
    else {
      if (mayChangeDerived(u)) {
        const outcome = deriveCallOutcome(row.legs.map(toDerivationInput), opts.loadtestTrunks);
        await storeOutcome(db, u.call.roomSid, row.call, outcome, u.call.origin === "loadgen");
      }
      results[i] = "recorded";
    }
  }
  for (const { i } of chunk) if (results[i] === undefined) throw new Error("group upsert returned no row for an update");
}

/** Only leg kind/reason/attributes (and a loadgen origin) feed the derivation; tracks and room events do not. */
function mayChangeDerived(update: CallUpdate): boolean {
  return (
    update.call.origin === "loadgen" ||
    update.legs.some((l) => l.kind != null || l.disconnectReason != null || l.attributes != null)
  );
}

interface StoredCall {
  room_name: string | null;
  tenant_id: string | null;
  channel: string | null;
  end_reason: string | null;
  trunk_id: string | null;
  is_probe: boolean;
}

interface StoredLeg {
  kind: string | null;
  disconnect_reason: string | null;
  left_at_ms: string | number | null;
  attributes: unknown;
}

export async function applyInTransaction(db: Db, update: CallUpdate, opts: ApplyOptions): Promise<ApplyResult> {
  const c = update.call;
  const e = update.event;
  const legs = update.legs.map(legRow);

  const result = await executeNamed(db, UPSERT_STATEMENT_NAME, sql`
    with ev as (
      insert into call_events (event_id, room_sid, event, participant_sid, track_sid, created_at_s, payload)
      select ${e?.eventId ?? null}, ${c.roomSid}, ${e?.event ?? null}, ${e?.participantSid ?? null}, ${e?.trackSid ?? null},
             coalesce(${e?.createdAtS ?? null}::bigint, 0), ${e ? jsonForStorage(e.payload) : null}::jsonb
      where ${e !== undefined}
      on conflict (event_id, created_at_s) do nothing
      returning 1
    ),
    fresh as (select ${e === undefined} or exists (select 1 from ev) as ok),
    c as (
      insert into calls (room_sid, room_name, tenant_id, origin, project, agent_id, attempt_id, run_id, started_at_ms, ended_at_ms)
      select ${c.roomSid}, ${c.roomName ?? null}, ${c.tenantId}, ${c.origin}, ${c.project ?? null}, ${c.agentId ?? null},
             ${c.attemptId ?? null}, ${c.runId ?? null}, ${c.startedAtMs ?? null}::bigint, ${c.endedAtMs ?? null}::bigint
      where (select ok from fresh)
      ${CALL_MERGE}
      returning room_name, tenant_id, channel, end_reason, trunk_id, is_probe
    ),
    l as (
      insert into call_legs (participant_sid, room_sid, identity, kind, state, joined_at_ms, left_at_ms, disconnect_reason,
                             first_audio_track_at_ms, audio_track_sid, audio_codec, attributes)
      select x.participant_sid, ${c.roomSid}, x.identity, x.kind, x.state, x.joined_at_ms, x.left_at_ms, x.disconnect_reason,
             x.first_audio_track_at_ms, x.audio_track_sid, x.audio_codec, x.attributes
      from jsonb_to_recordset(${jsonForStorage(legs)}::jsonb) as x(
        participant_sid text, identity text, kind text, state text, joined_at_ms bigint, left_at_ms bigint,
        disconnect_reason text, first_audio_track_at_ms bigint, audio_track_sid text, audio_codec text, attributes jsonb)
      where exists (select 1 from c)
      ${LEG_MERGE}
      returning participant_sid, kind, disconnect_reason, left_at_ms, attributes
    )
    select (select ok from fresh) as fresh,
           (select row_to_json(c) from c) as call,
           (select coalesce(json_agg(s), '[]'::json) from (
              select kind, disconnect_reason, left_at_ms, attributes from l
              union all
              select kind, disconnect_reason, left_at_ms, attributes from call_legs
              where room_sid = ${c.roomSid} and participant_sid not in (select participant_sid from l)
           ) s) as legs`);

  const row = rowsOf<{ fresh: boolean; call: StoredCall | null; legs: StoredLeg[] }>(result)[0];
  if (!row?.fresh) return "duplicate";
  if (!row.call) return "foreign";
  if (!mayChangeDerived(update)) return "recorded";

  const outcome = deriveCallOutcome(row.legs.map(toDerivationInput), opts.loadtestTrunks);
  await storeOutcome(db, c.roomSid, row.call, outcome, c.origin === "loadgen");
  return "recorded";
}

/** Writes channel/end reason/trunk/probe when they differ from what is stored (a known value is never erased). */
async function storeOutcome(db: Db, roomSid: string, stored: StoredCall, outcome: CallOutcome, loadgen: boolean): Promise<void> {
  const next = {
    channel: outcome.channel ?? stored.channel,
    endReason: outcome.endReason ?? stored.end_reason,
    trunkId: outcome.trunkId ?? stored.trunk_id,
    isProbe: stored.is_probe || outcome.isProbeTrunk || loadgen,
  };
  const changed =
    next.channel !== stored.channel ||
    next.endReason !== stored.end_reason ||
    next.trunkId !== stored.trunk_id ||
    next.isProbe !== stored.is_probe;
  if (!changed) return;
  await db.execute(sql`
    update calls set channel = ${next.channel}, end_reason = ${next.endReason}, trunk_id = ${next.trunkId},
                     is_probe = ${next.isProbe}, updated_at = now()
    where room_sid = ${roomSid}`);
  if (next.isProbe && !stored.is_probe && stored.room_name) {
    // The requests of a probe call's room are load-test traffic too (kept out of production percentiles).
    await db.execute(sql`
      update requests set is_probe = true
      where room_name = ${stored.room_name} and is_probe = false
        and (${stored.tenant_id}::text is null or tenant_id = ${stored.tenant_id})`);
  }
}

function toDerivationInput(l: StoredLeg): LegForDerivation {
  return {
    kind: l.kind,
    disconnectReason: l.disconnect_reason,
    leftAtMs: l.left_at_ms === null ? null : Number(l.left_at_ms),
    attributes: l.attributes,
  };
}

/** The incoming audio track is earlier than the stored one, so its sid/codec describe the first track. */
const FIRST_AUDIO_IS_NEW_TEXT =
  "(excluded.first_audio_track_at_ms is not null and (call_legs.first_audio_track_at_ms is null or excluded.first_audio_track_at_ms < call_legs.first_audio_track_at_ms))";

/**
 * How a call row merges with what is stored, shared by the per-event and the group statement:
 * known values are never erased, times widen, and a tenant's report never changes another tenant's
 * call (the webhook and operators, with no tenant, may change any).
 */
const CALL_MERGE = sql.raw(`on conflict (room_sid) do update set
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
      where calls.tenant_id is null or excluded.tenant_id is null or calls.tenant_id = excluded.tenant_id`);

/**
 * How a leg merges, shared by both statements. The audio track sid and codec describe the FIRST
 * audio track (the incoming one wins only when it is earlier); the leaving snapshot of attributes is
 * the final word whichever arrives last; a participant sid already filed under another room is left alone.
 */
const LEG_MERGE = sql.raw(`on conflict (participant_sid) do update set
        identity = coalesce(excluded.identity, call_legs.identity),
        kind = coalesce(nullif(excluded.kind, 'STANDARD'), call_legs.kind, excluded.kind),
        state = case when call_legs.state = 'DISCONNECTED' then call_legs.state
                     else coalesce(excluded.state, call_legs.state) end,
        joined_at_ms = least(call_legs.joined_at_ms, excluded.joined_at_ms),
        left_at_ms = greatest(call_legs.left_at_ms, excluded.left_at_ms),
        disconnect_reason = coalesce(nullif(excluded.disconnect_reason, 'UNKNOWN_REASON'), call_legs.disconnect_reason,
                                     excluded.disconnect_reason),
        audio_track_sid = case when ${FIRST_AUDIO_IS_NEW_TEXT} then coalesce(excluded.audio_track_sid, call_legs.audio_track_sid)
                               else coalesce(call_legs.audio_track_sid, excluded.audio_track_sid) end,
        audio_codec = case when ${FIRST_AUDIO_IS_NEW_TEXT} then coalesce(excluded.audio_codec, call_legs.audio_codec)
                           else coalesce(call_legs.audio_codec, excluded.audio_codec) end,
        first_audio_track_at_ms = least(call_legs.first_audio_track_at_ms, excluded.first_audio_track_at_ms),
        attributes = case when excluded.attributes is null then call_legs.attributes
                          when call_legs.attributes is null then excluded.attributes
                          when call_legs.state = 'DISCONNECTED' and excluded.state is distinct from 'DISCONNECTED'
                            then excluded.attributes || call_legs.attributes
                          else call_legs.attributes || excluded.attributes end,
        updated_at = now()
      where call_legs.room_sid = excluded.room_sid`);

/** A leg as both statements' JSON recordsets read it. */
function legRow(l: CallUpdate["legs"][number]) {
  return {
    participant_sid: l.participantSid,
    identity: l.identity ?? null,
    kind: l.kind ?? null,
    state: l.state ?? null,
    joined_at_ms: l.joinedAtMs ?? null,
    left_at_ms: l.leftAtMs ?? null,
    disconnect_reason: l.disconnectReason ?? null,
    first_audio_track_at_ms: l.firstAudioTrackAtMs ?? null,
    audio_track_sid: l.audioTrackSid ?? null,
    audio_codec: l.audioCodec ?? null,
    attributes: l.attributes ?? null,
  };
}

/**
 * The upsert runs as a NAMED prepared statement: Postgres parses and plans the CTE once per connection
 * instead of once per event (measured 4-5× faster for this statement). Its text is constant (every
 * value is a parameter), as a named statement requires. PGlite ignores the name.
 */
const UPSERT_STATEMENT_NAME = "voxgate_calls_upsert_v2";
const GROUP_UPSERT_STATEMENT_NAME = "voxgate_calls_group_upsert_v2";

/**
 * call_events is day-partitioned on created_at_s (LiveKit's event time, which a replay repeats), so the
 * event's key is (event_id, created_at_s). An event without one is filed under second 0 (the DEFAULT
 * partition), never under the time it arrived: a replay arriving later must meet the same key.
 * Retention keeps such rows until their received_at passes the horizon (src/retention/tables.ts).
 */
const EVENT_SECOND = sql.raw("coalesce(created_at_s, 0)");

