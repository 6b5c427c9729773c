import { sql } from "drizzle-orm";
import { type Db, queryRows, rowsOf } from "../db/client.js";
import { namedStatement } from "../db/named.js";

/** The seq bucket of turns whose room is not (yet) known: room_sequences.room_name is NOT NULL. */
export const UNKNOWN_ROOM = "";

/** Rooms already known for these sessions of this tenant (sessions.room_name). */
export async function sessionRooms(tx: Db, tenantId: string | null, sessionIds: string[]): Promise<Map<string, string>> {
  if (sessionIds.length === 0) return new Map();
  const rows = await queryRows<{ id: string; room_name: string }>(
    tx,
    sql`SELECT id, room_name FROM sessions
        WHERE id IN (SELECT json_array_elements_text(${JSON.stringify(sessionIds)}::json))
          AND room_name IS NOT NULL AND tenant_id IS NOT DISTINCT FROM ${tenantId}::text`,
  );
  return new Map(rows.map((r) => [r.id, r.room_name]));
}

/** allocateSeqs' one statement, NAMED (src/db/named.ts): parsed and planned once per connection. */
const numberRooms = namedStatement("voxgate_turn_seqs", () => {
  const tenant = sql`${sql.placeholder("tenant")}::text`;
  return sql`WITH r AS (
      SELECT v.i, coalesce(v.room_name, (SELECT s.room_name FROM sessions s
               WHERE s.id = v.session_id AND s.tenant_id IS NOT DISTINCT FROM ${tenant}), ${sql.raw(`'${UNKNOWN_ROOM}'`)}) AS room_name, v.n
      FROM json_to_recordset(${sql.placeholder("requests")}::json) AS v(i int, session_id text, room_name text, n bigint)
    ), seq AS (
      INSERT INTO room_sequences (tenant_id, room_name, last_seq)
      SELECT ${tenant}, r.room_name, sum(r.n) FROM r GROUP BY r.room_name ORDER BY r.room_name
      ON CONFLICT ON CONSTRAINT room_sequences_room_uq
      DO UPDATE SET last_seq = room_sequences.last_seq + excluded.last_seq
      RETURNING room_name, last_seq
    )
    SELECT 'r' AS kind, r.i, r.room_name, r.n FROM r
    UNION ALL SELECT 's', NULL, seq.room_name, seq.last_seq FROM seq`;
});

/** A group of turns to number: `n` turns of one session, in `room` (their own or one a turn of the session names) or, when null, the session's. */
export interface SeqRequest {
  session_id: string;
  room_name: string | null;
  n: number;
}

/**
 * The room of each group (its own, else its session's stored room, else UNKNOWN_ROOM) and the first
 * of the consecutive seq values handed out per room for all the groups, in ONE statement (one round
 * trip: the session rooms' read and the room_sequences upsert were two). Rooms are upserted in sorted
 * order, so concurrent batches lock room_sequences rows in the same order. Returns the groups' rooms
 * (in `requests` order) and each room's first new seq.
 */
export async function allocateSeqs(
  db: Db,
  tenantId: string | null,
  requests: readonly SeqRequest[],
): Promise<{ rooms: string[]; first: Map<string, number> }> {
  if (requests.length === 0) return { rooms: [], first: new Map() };
  const payload = JSON.stringify(requests.map((q, i) => ({ i, session_id: q.session_id, room_name: q.room_name, n: q.n })));
  const rows = rowsOf<{ kind: "r" | "s"; i: number; room_name: string; n: string | number }>(await numberRooms(db, { tenant: tenantId, requests: payload }));
  const rooms: string[] = new Array(requests.length).fill(UNKNOWN_ROOM);
  const counts = new Map<string, number>();
  const last = new Map<string, number>();
  for (const row of rows) {
    if (row.kind === "r") {
      rooms[row.i] = row.room_name;
      counts.set(row.room_name, (counts.get(row.room_name) ?? 0) + Number(row.n));
    } else last.set(row.room_name, Number(row.n));
  }
  const first = new Map<string, number>();
  for (const [room, n] of counts) first.set(room, (last.get(room) ?? n) - n + 1);
  return { rooms, first };
}

/**
 * A row named the room of its session: the session (of this tenant, if it exists and has no room
 * yet) learns it, and that session's earlier turns and dead-air rows without a room get it too.
 */
export async function learnSessionRooms(tx: Db, tenantId: string | null, named: Map<string, string>): Promise<void> {
  if (named.size === 0) return;
  const payload = JSON.stringify([...named].sort(([a], [b]) => (a < b ? -1 : 1)).map(([session_id, room_name]) => ({ session_id, room_name })));
  const pairs = sql`json_to_recordset(${payload}::json) AS v(session_id text, room_name text)`;
  await tx.execute(sql`UPDATE sessions s SET room_name = v.room_name, updated_at = now() FROM ${pairs}
      WHERE s.id = v.session_id AND s.room_name IS NULL AND s.tenant_id IS NOT DISTINCT FROM ${tenantId}::text`);
  await tx.execute(sql`UPDATE turns t SET room_name = v.room_name FROM ${pairs}
      WHERE t.session_id = v.session_id AND t.room_name IS NULL AND t.tenant_id IS NOT DISTINCT FROM ${tenantId}::text`);
  await tx.execute(sql`UPDATE dead_air_events d SET room_name = v.room_name FROM ${pairs}
      WHERE d.session_id = v.session_id AND d.room_name IS NULL AND d.tenant_id IS NOT DISTINCT FROM ${tenantId}::text`);
}
