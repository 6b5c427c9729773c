import { sql } from "drizzle-orm";
import { z } from "zod";
import { type Db, queryRows } from "../db/client.js";
import { epochMs, int32, shortText } from "./fields.js";
import { learnSessionRooms, sessionRooms } from "./rooms.js";
import { withRetry } from "../db/errors.js";
import { namedRooms, type TimelineResult, validateRows } from "./turns.js";

/** One event of POST /v1/ingest/dead-air (docs/api/ingest.md); unknown keys ignored. */
export const deadAirSchema = z.object({
  session_id: shortText,
  started_at_ms: epochMs.describe("re-sent events are no-ops keyed on (session_id, started_at_ms)"),
  duration_ms: int32,
  threshold_used_ms: int32,
  room_name: shortText.nullish().describe("default: the session's room"),
});

/** Stores dead-air events of one tenant; (session_id, started_at_ms) within the tenant makes re-sent rows no-ops. */
export async function storeDeadAir(db: Db, tenantId: string | null, batch: unknown[]): Promise<TimelineResult> {
  const { valid, skipped, skippedCount } = validateRows(deadAirSchema, batch);
  const seen = new Set<string>();
  const unique = valid.filter((e) => {
    const key = `${e.session_id}\u0000${e.started_at_ms}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
  const accepted =
    unique.length === 0
      ? 0
      : await withRetry(() =>
          db.transaction(async (tx) => {
            const known = await sessionRooms(tx, tenantId, [...new Set(unique.map((e) => e.session_id))]);
            const rows = unique
              .map((e) => ({
                tenant_id: tenantId,
                session_id: e.session_id,
                room_name: e.room_name ?? known.get(e.session_id) ?? null,
                started_at_ms: e.started_at_ms,
                duration_ms: e.duration_ms,
                threshold_used_ms: e.threshold_used_ms,
              }))
              .sort((a, b) => (a.session_id < b.session_id ? -1 : a.session_id > b.session_id ? 1 : a.started_at_ms - b.started_at_ms));
            const inserted = await queryRows<{ id: number }>(
              tx,
              sql`INSERT INTO dead_air_events (tenant_id, session_id, room_name, started_at_ms, duration_ms, threshold_used_ms)
                  SELECT tenant_id, session_id, room_name, started_at_ms, duration_ms, threshold_used_ms
                  FROM json_populate_recordset(NULL::dead_air_events, ${JSON.stringify(rows)}::json)
                  ON CONFLICT (session_id, started_at_ms, tenant_id) DO NOTHING
                  RETURNING id`,
            );
            await learnSessionRooms(tx, tenantId, namedRooms(unique));
            return inserted.length;
          }),
        );
  return {
    accepted,
    duplicates: valid.length - accepted,
    skipped: skippedCount,
    skipped_rows: skipped,
  };
}
