import { sql } from "drizzle-orm";
import { type Db, rowsOf } from "../db/client.js";
import { executeNamed } from "../db/named.js";
import { applyRequestRollups, type RequestRow } from "../rollups/apply.js";
import { withRetry } from "../db/errors.js";
import { attachTurns } from "../rollups/fleet-index.js";

/** Columns written by ingest, in the order of the INSERT; all others keep their defaults. */
const REQUEST_COLUMNS = [
  "id",
  "ts",
  "tenant_id",
  "project",
  "session_id",
  "room_name",
  "agent_id",
  "modality",
  "model_id",
  "provider",
  "status",
  "error_message",
  "fallback_from",
  "ttfb_ms",
  "total_latency_ms",
  "cost_usd",
  "rated_price_usd",
  "rate_rule",
  "pricing",
  "input_tokens",
  "output_tokens",
  "cached_input_tokens",
  "audio_seconds",
  "characters",
  "input_units",
  "output_units",
  "metadata",
  "is_probe",
] as const;

/** A row as json_populate_recordset reads it; null fields are left out (absent keys are NULL). */
function toJsonRow(r: RequestRow) {
  return {
    id: r.id,
    ts: r.ts instanceof Date ? r.ts.toISOString() : r.ts,
    tenant_id: r.tenantId ?? undefined,
    project: r.project ?? "default",
    session_id: r.sessionId ?? undefined,
    room_name: r.roomName ?? undefined,
    agent_id: r.agentId ?? undefined,
    modality: r.modality,
    model_id: r.modelId,
    provider: r.provider,
    status: r.status ?? "success",
    error_message: r.errorMessage ?? undefined,
    fallback_from: r.fallbackFrom ?? undefined,
    ttfb_ms: r.ttfbMs ?? undefined,
    total_latency_ms: r.totalLatencyMs ?? undefined,
    cost_usd: r.costUsd ?? undefined,
    rated_price_usd: r.ratedPriceUsd ?? undefined,
    rate_rule: r.rateRule ?? undefined,
    pricing: r.pricing ?? "priced",
    input_tokens: r.inputTokens ?? undefined,
    output_tokens: r.outputTokens ?? undefined,
    cached_input_tokens: r.cachedInputTokens ?? undefined,
    audio_seconds: r.audioSeconds ?? undefined,
    characters: r.characters ?? undefined,
    input_units: r.inputUnits ?? undefined,
    output_units: r.outputUnits ?? undefined,
    metadata: r.metadata ?? undefined,
    is_probe: r.isProbe ?? false,
  };
}

const columnList = sql.raw(REQUEST_COLUMNS.join(", "));

/**
 * The same columns read from the JSON rows, except that a record from a room whose call is marked
 * probe traffic (load-test trunk) is stored as probe too: the webhook may have marked the call before
 * the agent's records arrive (the reverse order is handled when the call is marked). Only calls of the
 * record's own tenant, or of no tenant (the operator's webhook and trunks), count: room names are
 * the caller's to choose, so another tenant's call could otherwise hide this tenant's latency.
 */
const selectList = sql.raw(
  REQUEST_COLUMNS.map((c) =>
    c === "is_probe"
      ? `(src.is_probe OR (src.room_name IS NOT NULL AND EXISTS (SELECT 1 FROM calls c WHERE c.room_name = src.room_name AND c.is_probe
            AND (c.tenant_id IS NULL OR c.tenant_id = src.tenant_id)))) AS is_probe`
      : `src.${c}`,
  ).join(", "),
);

/**
 * Stores a batch of request rows of one tenant in ONE transaction and one round trip for the data:
 * a multi-row insert (json_populate_recordset, ON CONFLICT (id, tenant_id) DO NOTHING) whose RETURNING feeds
 * the session upsert in the same statement, then the rollups from exactly the rows inserted.
 * Returns the rows actually inserted. Rows are sorted by id so concurrent overlapping batches take
 * row locks in the same order (no deadlock); deadlocks that still happen are retried.
 */
export async function storeRequestRows(db: Db, tenantId: string | null, rows: RequestRow[]): Promise<RequestRow[]> {
  if (rows.length === 0) return [];
  const sorted = [...rows].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  const payload = JSON.stringify(sorted.map(toJsonRow));
  return withRetry(() =>
    db.transaction(async (tx) => {
      const insertedIds = rowsOf<{ id: string; is_probe: boolean }>(
        await executeNamed(tx, INSERT_STATEMENT_NAME, insertWithSessions(tenantId, payload)),
      );
      if (insertedIds.length === 0) return [];
      const probe = new Map(insertedIds.map((r) => [r.id, r.is_probe]));
      const inserted: RequestRow[] = [];
      for (const r of sorted) {
        const isProbe = probe.get(r.id);
        if (isProbe === undefined) continue;
        // Copied only when the insert marked it probe (a probe call's room), as the rollups must key it.
        inserted.push(isProbe === (r.isProbe ?? false) ? r : { ...r, isProbe });
      }
      await applyRequestRollups(tx, inserted);
      // Turns that arrived before their session named its agent now count toward it (GET /api/agents).
      const agentSessions = new Set<string>();
      for (const r of inserted) if (r.agentId && r.sessionId) agentSessions.add(r.sessionId);
      await attachTurns(tx, tenantId, { sessionIds: [...agentSessions].sort() });
      return inserted;
    }),
  );
}

/**
 * Name of the prepared statement below: its text is constant (tenant and payload are parameters), so
 * Postgres parses and plans the CTE once per connection, not once per batch. Bump on any text change.
 */
const INSERT_STATEMENT_NAME = "voxgate_ingest_requests_v2";

/**
 * The insert, and the fold of newly inserted rows into their sessions (created on first sight).
 * Only rows the insert returned count, so a duplicate never counts twice. Money is summed in SQL;
 * a session's project is the first non-`default` project its records name; a new session without
 * a room in its records takes the room its turns or dead-air rows already named. Ids are unique per
 * tenant (the conflict targets include tenant_id, NULLS NOT DISTINCT): another tenant's request or
 * session with the same id is neither touched nor reported as a duplicate.
 */
function insertWithSessions(tenantId: string | null, payload: string) {
  return sql`
    WITH ins AS (
      INSERT INTO requests (${columnList})
      SELECT ${selectList} FROM json_populate_recordset(NULL::requests, ${payload}::json) AS src
      ON CONFLICT (id, tenant_id) DO NOTHING
      RETURNING id, ts, session_id, project, room_name, agent_id, modality, cost_usd, is_probe
    ), upserted AS (
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
    )
    SELECT id, is_probe FROM ins`;
}
