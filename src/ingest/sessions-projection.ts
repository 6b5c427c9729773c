import { type Placeholder, sql } from "drizzle-orm";
import type { RequestProjection } from "../rollups/projection.js";

/**
 * The sessions projection: newly inserted request rows folded into their sessions (created on first
 * sight), as CTEs of ingest's insert statement over `ins` (one round trip). Only rows the insert
 * returned count, so a duplicate never counts twice. Money is summed in SQL; a session's project is
 * the first non-`default` project its records name; a new session without a room in its records takes
 * the room its turns or dead-air rows already named. Session ids are unique per tenant (the conflict
 * target includes tenant_id, NULLS NOT DISTINCT). Locks: sessions in id order, then agent versions.
 *
 * An upserted session that starts before today's UTC day bumps its agent's sessions version (the
 * cached span counts of GET /api/agents are checked against it:
 * src/db/schema/fleet-index-agent-session-versions.ts), in agent order so two batches lock the
 * versions alike. It reads the sessions CTE's RETURNING, hence it lives here.
 *
 * The texts keep their leading and trailing white space: the insert statement reads exactly as it
 * did when it was one hand-written statement.
 */
export const sessionsProjection: RequestProjection = {
  name: "sessions",
  insertCtes: (tenantId: Placeholder) => [
    {
      name: "upserted",
      sql: sql`
      INSERT INTO sessions AS s (id, tenant_id, project, room_name, agent_id, started_at, ended_at,
                                 modalities, request_count, total_cost_usd, updated_at)
      SELECT r.session_id, ${tenantId}::text, coalesce(max(nullif(r.project, 'default')), 'default'),
             coalesce(max(r.room_name),
               (SELECT t.room_name FROM turns t WHERE t.session_id = r.session_id AND t.room_name IS NOT NULL
                  AND t.tenant_id IS NOT DISTINCT FROM ${tenantId}::text LIMIT 1),
               (SELECT d.room_name FROM dead_air_events d WHERE d.session_id = r.session_id AND d.room_name IS NOT NULL
                  AND d.tenant_id IS NOT DISTINCT FROM ${tenantId}::text LIMIT 1)),
             max(r.agent_id), min(r.ts), max(r.ts), array_agg(DISTINCT r.modality ORDER BY r.modality), count(*),
             coalesce(sum(r.cost_usd), 0), now()
      FROM ins r
      WHERE r.session_id IS NOT NULL
      GROUP BY r.session_id
      ORDER BY r.session_id
      ON CONFLICT (id, tenant_id) DO UPDATE SET
        started_at = least(s.started_at, excluded.started_at),
        ended_at = greatest(s.ended_at, excluded.ended_at),
        modalities = ARRAY(SELECT DISTINCT m FROM unnest(s.modalities || excluded.modalities) AS m ORDER BY m),
        request_count = s.request_count + excluded.request_count,
        total_cost_usd = s.total_cost_usd + excluded.total_cost_usd,
        room_name = coalesce(s.room_name, excluded.room_name),
        project = CASE WHEN s.project = 'default' THEN excluded.project ELSE s.project END,
        agent_id = coalesce(s.agent_id, excluded.agent_id),
        updated_at = now()
      RETURNING s.agent_id, s.started_at
    `,
    },
    {
      name: "bumped",
      sql: sql`
      INSERT INTO fleet_index_agent_session_versions AS v (tenant_id, agent_id)
      SELECT DISTINCT ${tenantId}::text, u.agent_id FROM upserted u
       WHERE u.agent_id IS NOT NULL AND u.started_at < date_trunc('day', now(), 'UTC')
       ORDER BY 2
      ON CONFLICT (agent_id, tenant_id) DO UPDATE SET version = v.version + 1
    `,
    },
  ],
};
