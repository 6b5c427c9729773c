/**
 * bench:agents' fleet data (sessions, calls, turns) derived from the generated request rows: its own
 * module so the seeding phases can be timed apart (bench/seed-phases.ts) without running the bench.
 */
import { sql } from "drizzle-orm";
import type { Db } from "../src/db/client.js";
import { fmt } from "./support.js";

/** Sessions, calls and turns derived from the generated request rows (before the rollups are built). */
export async function seedFleet(db: Db): Promise<void> {
  const t0 = Date.now();
  let t = t0;
  const lap = (what: string) => {
    const now = Date.now();
    console.log(`    ${what} in ${fmt((now - t) / 1000)} s`);
    t = now;
  };
  await db.execute(sql`INSERT INTO sessions (id, tenant_id, project, agent_id, started_at, ended_at, modalities, request_count, total_cost_usd)
    SELECT session_id, tenant_id, min(project), min(agent_id), min(ts), max(ts), array_agg(DISTINCT modality ORDER BY modality), count(*), sum(coalesce(cost_usd, 0))
      FROM requests WHERE session_id IS NOT NULL GROUP BY session_id, tenant_id`);
  lap("sessions");
  // One call for one session in ten, 5 % of them load tests (probe); its room names the session's turns.
  await db.execute(sql`INSERT INTO calls (room_sid, room_name, tenant_id, project, agent_id, origin, channel, is_probe, started_at_ms, ended_at_ms)
    SELECT 'RM_' || id, 'room-' || id, tenant_id, project, agent_id, CASE WHEN h < 5 THEN 'loadgen' ELSE 'agent' END, 'sip', h < 5,
           (extract(epoch FROM started_at) * 1000)::bigint, (extract(epoch FROM ended_at) * 1000)::bigint + 60000
      FROM (SELECT *, (hashtext(id) & 2147483647) % 100 AS h FROM sessions) s WHERE h % 10 = 0 OR h < 5`);
  lap("calls");
  await db.execute(sql`UPDATE sessions s SET room_name = c.room_name FROM calls c WHERE c.room_sid = 'RM_' || s.id`);
  lap("sessions.room_name");
  // One turn per llm request, attributed to its session's agent (what turn ingest stamps).
  await db.execute(sql`INSERT INTO turns (tenant_id, session_id, room_name, turn_index, seq, caller_speak_start_ms, caller_speak_end_ms,
      agent_speak_start_ms, agent_speak_end_ms, response_speed_ms, agent_id)
    SELECT r.tenant_id, r.session_id, s.room_name, row_number() OVER w - 1, row_number() OVER w,
           e - 2500, e - 500, e + round(r.ttfb_ms * 3)::bigint, e + round(r.ttfb_ms * 3)::bigint + 3000, round(r.ttfb_ms * 3)::int, r.agent_id
      FROM (SELECT *, (extract(epoch FROM ts) * 1000)::bigint AS e FROM requests WHERE modality = 'llm' AND session_id IS NOT NULL) r
      JOIN sessions s ON s.id = r.session_id AND s.tenant_id IS NOT DISTINCT FROM r.tenant_id
    WINDOW w AS (PARTITION BY r.tenant_id, r.session_id ORDER BY r.ts, r.id)`);
  lap("turns");
  // Probe calls make their rooms' requests probe (what the call upsert does).
  await db.execute(sql`UPDATE requests r SET is_probe = true FROM calls c WHERE c.is_probe AND r.session_id = substr(c.room_sid, 4) AND NOT r.is_probe`);
  lap("probe requests");
  console.log(`  sessions, calls, turns in ${fmt((Date.now() - t0) / 1000)} s`);
}
