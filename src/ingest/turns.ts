import { type Placeholder, type SQL, sql } from "drizzle-orm";
import { z } from "zod";
import { type Db, rowsOf } from "../db/client.js";
import { namedStatement } from "../db/named.js";
import { epochMs, firstIssue, int32, shortText } from "./fields.js";
import { fastValidator } from "./record-fast.js";
import { allocateSeqs, learnSessionRooms, type SeqRequest, UNKNOWN_ROOM } from "./rooms.js";
import { withRetry } from "../db/errors.js";
import { foldTurns, TURN_FOLD_RETURNING, type TurnFold, type TurnFoldRow, turnFolds } from "../rollups/fleet-index.js";

const callerInOrder = (t: { caller_speak_start_ms: number; caller_speak_end_ms: number }) => t.caller_speak_end_ms >= t.caller_speak_start_ms;
const agentInOrder = (t: { agent_speak_start_ms?: number | null; agent_speak_end_ms?: number | null }) =>
  t.agent_speak_end_ms == null || t.agent_speak_start_ms == null || t.agent_speak_end_ms >= t.agent_speak_start_ms;

const turnShape = {
  session_id: shortText,
  turn_index: int32.describe("re-sent turns are no-ops keyed on (session_id, turn_index)"),
  caller_speak_start_ms: epochMs,
  caller_speak_end_ms: epochMs.describe("not before caller_speak_start_ms"),
  agent_speak_start_ms: epochMs.nullish(),
  agent_speak_end_ms: epochMs.nullish().describe("not before agent_speak_start_ms"),
  response_speed_ms: int32.nullish().describe("elapsed ms; null when the agent never answered"),
  room_name: shortText.nullish().describe("default: the session's room"),
};

/** One turn of POST /v1/ingest/turns (docs/api/ingest.md); unknown keys ignored. */
export const turnSchema = z
  .object(turnShape)
  .refine(callerInOrder, { message: "must not be before caller_speak_start_ms", path: ["caller_speak_end_ms"] })
  .refine(agentInOrder, { message: "must not be before agent_speak_start_ms", path: ["agent_speak_end_ms"] });

/**
 * turnSchema without zod (its fields' readings, record-fast.ts, and the same two order checks): the turn
 * as the schema parses it, or null, when the schema decides and words why. zod was ~0.2 ms of the OTLP
 * receiver's CPU per export (42 turns).
 */
const fastTurn = fastValidator<TurnInput>(turnShape);
function parseTurn(raw: unknown, now: number): TurnInput | null {
  const t = fastTurn.parse(raw, now);
  return t !== null && callerInOrder(t) && agentInOrder(t) ? t : null;
}

export type TurnInput = z.infer<typeof turnSchema>;

export interface RowSkip {
  index: number;
  reason: string;
}

export interface TimelineResult {
  accepted: number;
  duplicates: number;
  skipped: number;
  skipped_rows: RowSkip[];
}

export const MAX_LISTED_ROW_SKIPS = 100;

/** Validates each row on its own: a malformed row is skipped, never the batch; the first `listAtMost` skips are listed. */
export function validateRows<T>(schema: z.ZodType<T>, batch: unknown[], listAtMost = MAX_LISTED_ROW_SKIPS, fast?: (raw: unknown, now: number) => T | null) {
  const valid: T[] = [];
  const skipped: RowSkip[] = [];
  let skippedCount = 0;
  const now = Date.now();
  batch.forEach((raw, index) => {
    // The schema's zod-free twin, when it has one, answers valid rows; anything else goes to the schema.
    const quick = fast?.(raw, now) ?? null;
    if (quick !== null) {
      valid.push(quick);
      return;
    }
    const parsed = schema.safeParse(raw);
    if (parsed.success) valid.push(parsed.data);
    else {
      skippedCount++;
      if (skipped.length < listAtMost) skipped.push({ index, reason: firstIssue(parsed.error) });
    }
  });
  return { valid, skipped, skippedCount };
}

/**
 * Stores turns of one tenant in one transaction: each turn's room is its own room_name or its
 * session's; seq values come from room_sequences per (tenant, room) in arrival order;
 * (session_id, turn_index) within the tenant makes re-sent turns no-ops (with the day-partition key
 * caller_speak_start_ms in the key: a re-send repeats its start time).
 */
export async function storeTurns(db: Db, tenantId: string | null, batch: unknown[]): Promise<TimelineResult> {
  const checked = checkTurns(batch);
  const accepted = checked.unique.length === 0 ? 0 : await withRetry(() => db.transaction((tx) => insertTurns(tx, tenantId, checked.unique)));
  return turnsResult(checked, accepted);
}

type Turn = z.infer<typeof turnSchema>;
/** A turn batch validated, each (session_id, turn_index) once. */
export interface CheckedTurns {
  unique: Turn[];
  inBatchDuplicates: number;
  skipped: RowSkip[];
  skippedCount: number;
}

/**
 * Validates each turn on its own and keeps the first of a (session_id, turn_index) pair; `listAtMost`
 * as validateRows' (an in-process producer lists them all).
 */
export function checkTurns(batch: unknown[], listAtMost?: number): CheckedTurns {
  const { valid, skipped, skippedCount } = validateRows(turnSchema, batch, listAtMost, parseTurn);
  const seen = new Set<string>();
  const unique = valid.filter((t) => {
    const key = `${t.session_id}\u0000${t.turn_index}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
  return { unique, inBatchDuplicates: valid.length - unique.length, skipped, skippedCount };
}

export function turnsResult(checked: CheckedTurns, accepted: number): TimelineResult {
  return {
    accepted,
    duplicates: checked.inBatchDuplicates + checked.unique.length - accepted,
    skipped: checked.skippedCount,
    skipped_rows: checked.skipped,
  };
}

/**
 * Inserts checked turns inside the caller's transaction (POST /v1/turns' own) and folds those its
 * session's agent owns into the per-agent rollups; returns how many were new. The OTLP receiver
 * numbers its turns before its transaction (numberTurns), inserts them in ingest's
 * (insertNumberedTurns) and hands the folds to ingest's fold statement.
 */
export async function insertTurns(tx: Db, tenantId: string | null, unique: Turn[]): Promise<number> {
  const { accepted, folds } = await insertNumberedTurns(tx, tenantId, await numberTurns(tx, tenantId, unique));
  await foldTurns(tx, folds);
  return accepted;
}

/** Checked turns with their room and seq, ready to insert. */
export interface NumberedTurns {
  rows: TurnRow[];
  /** session_id → room_name the turns name themselves (their sessions' earlier rows learn it). */
  named: Map<string, string>;
}

interface TurnRow {
  tenant_id: string | null;
  session_id: string;
  room_name: string | null;
  turn_index: number;
  seq: number;
  caller_speak_start_ms: number;
  caller_speak_end_ms: number;
  agent_speak_start_ms: number | null;
  agent_speak_end_ms: number | null;
  response_speed_ms: number | null;
}

/**
 * Each turn's room (its own room_name, else one a turn of its session names, else its session's)
 * and seq, handed out per (tenant, room) in arrival order. Seq values need only be unique and rising
 * per room, so the OTLP receiver takes them in a statement of their own (autocommit): the
 * room_sequences row of a room (or of turns without one) is hit by every batch, and held inside the
 * batch's transaction it made concurrent exports wait for each other's COMMIT. A batch rolled back
 * after this leaves a gap, as a re-sent turn already does.
 */
export async function numberTurns(db: Db, tenantId: string | null, unique: Turn[]): Promise<NumberedTurns> {
  const named = namedRooms(unique);
  if (unique.length === 0) return { rows: [], named };
  // One group per (session, own room): a null room is the session's, looked up with the seqs.
  const groups = new Map<string, SeqRequest & { index: number }>();
  const groupOf = unique.map((t) => {
    const room = t.room_name ?? named.get(t.session_id) ?? null;
    const key = `${t.session_id}\u0000${room ?? ""}\u0000${room === null ? "0" : "1"}`;
    let g = groups.get(key);
    if (!g) {
      g = { session_id: t.session_id, room_name: room, n: 0, index: groups.size };
      groups.set(key, g);
    }
    g.n++;
    return g.index;
  });
  const { rooms, first: next } = await allocateSeqs(db, tenantId, [...groups.values()]);
  const rows = unique.map((t, i): TurnRow => {
    const bucket = rooms[groupOf[i] ?? 0] ?? UNKNOWN_ROOM;
    const seq = next.get(bucket) ?? 1;
    next.set(bucket, seq + 1);
    return {
      tenant_id: tenantId,
      session_id: t.session_id,
      room_name: bucket === UNKNOWN_ROOM ? null : bucket,
      turn_index: t.turn_index,
      seq,
      caller_speak_start_ms: t.caller_speak_start_ms,
      caller_speak_end_ms: t.caller_speak_end_ms,
      agent_speak_start_ms: t.agent_speak_start_ms ?? null,
      agent_speak_end_ms: t.agent_speak_end_ms ?? null,
      response_speed_ms: t.response_speed_ms ?? null,
    };
  });
  // In key order, so concurrent batches lock turns' unique keys alike.
  rows.sort((a, b) => (a.session_id < b.session_id ? -1 : a.session_id > b.session_id ? 1 : a.turn_index - b.turn_index));
  return { rows, named };
}

/**
 * The turns' insert, numbered rows read from a JSON array (`rows`: json_populate_recordset over the
 * table's row type), each turn stamped with its session's agent as it is inserted; returns
 * TURN_FOLD_RETURNING per new turn. Turns of a session that names its agent count toward that agent
 * (GET /api/agents). The agent is a lookup per turn ((id, tenant_id) is unique): as a join, the plan
 * (100 rows estimated for any JSON array) hashed a scan of every session for each batch.
 */
export function turnInsert(rows: Placeholder): SQL {
  return sql`INSERT INTO turns AS t (tenant_id, session_id, room_name, turn_index, seq, caller_speak_start_ms,
      caller_speak_end_ms, agent_speak_start_ms, agent_speak_end_ms, response_speed_ms, agent_id)
    SELECT v.tenant_id, v.session_id, v.room_name, v.turn_index, v.seq, v.caller_speak_start_ms,
      v.caller_speak_end_ms, v.agent_speak_start_ms, v.agent_speak_end_ms, v.response_speed_ms,
      (SELECT s.agent_id FROM sessions s WHERE s.id = v.session_id AND s.tenant_id IS NOT DISTINCT FROM v.tenant_id)
    FROM json_populate_recordset(NULL::turns, ${rows}::json) AS v
    ON CONFLICT (session_id, turn_index, caller_speak_start_ms, tenant_id) DO NOTHING
    RETURNING ${TURN_FOLD_RETURNING}`;
}

/** turnInsert as a NAMED statement (src/db/named.ts): parsed and planned once per connection. */
const insertTurnRows = namedStatement("voxgate_turns_insert", () => turnInsert(sql.placeholder("turns")));

/** A named statement that runs turnInsert (reading "turns") with writes of its own, and their values. */
export interface TurnInsertWith {
  statement: (db: Db, values: Record<string, unknown>) => Promise<unknown>;
  values: Record<string, unknown>;
}

/**
 * Inserts numbered turns in the caller's transaction: how many were new, and the folds of those whose
 * session names its agent (stamped on the turn as it is inserted; the others are attributed when the
 * session learns its agent: attachTurns). The caller folds them into the per-agent rollups.
 * `alongside`: a statement of the caller's that runs turnInsert with its own writes of the batch (the
 * OTLP receiver's kept spans and turn attribution), one round trip for all; it runs even when there is
 * no turn. Its rows are turnInsert's, and any turns it attributed (TURN_FOLD_RETURNING) with `attached`
 * true, folded alike. Its own writes must not touch sessions or rollups (the lock order below is kept
 * by statement order).
 */
export async function insertNumberedTurns(
  tx: Db,
  tenantId: string | null,
  numbered: NumberedTurns,
  alongside?: TurnInsertWith,
): Promise<{ accepted: number; folds: TurnFold[] }> {
  if (numbered.rows.length === 0 && !alongside) return { accepted: 0, folds: [] };
  // Sessions first (in id order), as ingest locks them, before turns and per-agent rollups:
  // updating a session after those could deadlock with a batch that holds the session. The new
  // turns carry their room already; this names the room of the session's earlier rows.
  await learnSessionRooms(tx, tenantId, numbered.named);
  const turns = JSON.stringify(numbered.rows);
  const result = alongside ? await alongside.statement(tx, { ...alongside.values, turns }) : await insertTurnRows(tx, { turns });
  // An alongside statement may return turns it attributed too (`attached`: not new).
  const rows = rowsOf<TurnFoldRow & { attached?: boolean }>(result);
  let accepted = 0;
  for (const r of rows) if (r.attached !== true) accepted++;
  return { accepted, folds: turnFolds(rows) };
}

/** session_id → room_name for rows that name their room (the last naming row wins). */
export function namedRooms(rows: { session_id: string; room_name?: string | null }[]): Map<string, string> {
  const named = new Map<string, string>();
  for (const r of rows) if (r.room_name) named.set(r.session_id, r.room_name);
  return named;
}
