import { sql } from "drizzle-orm";
import { type Db, queryRows } from "../db/client.js";


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

/**
 * Hands out `count` consecutive seq values for each room in one statement, rooms in sorted order
 * (so concurrent batches lock room_sequences rows in the same order). Returns each room's first
 * new seq.
 */
export async function allocateSeqs(tx: Db, tenantId: string | null, counts: Map<string, number>): Promise<Map<string, number>> {
  if (counts.size === 0) return new Map();
  const payload = JSON.stringify([...counts].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([room_name, n]) => ({ room_name, n })));
  const rows = await queryRows<{ room_name: string; last_seq: string | number }>(
    tx,
    sql`INSERT INTO room_sequences (tenant_id, room_name, last_seq)
        SELECT ${tenantId}::text, v.room_name, v.n FROM json_to_recordset(${payload}::json) AS v(room_name text, n bigint)
        ORDER BY v.room_name
        ON CONFLICT ON CONSTRAINT room_sequences_room_uq
        DO UPDATE SET last_seq = room_sequences.last_seq + excluded.last_seq
        RETURNING room_name, last_seq`,
  );
  const first = new Map<string, number>();
  for (const r of rows) first.set(r.room_name, Number(r.last_seq) - (counts.get(r.room_name) ?? 0) + 1);
  return first;
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
