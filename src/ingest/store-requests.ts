import { type Placeholder, sql } from "drizzle-orm";
import { type Db, rowsOf } from "../db/client.js";
import { namedStatement } from "../db/named.js";
import { type RequestRow, requests } from "../db/schema/requests.js";
import { hasServerDefault, literalDefaults, recordsetType, storedColumns } from "../db/table-columns.js";
import { applyRequestRollups } from "../rollups/apply.js";
import { withRetry } from "../db/errors.js";
import { attachTurns } from "../rollups/fleet-index.js";

/**
 * Columns written by ingest, in the order of the table (src/db/schema/requests.ts): all of them but
 * those the database fills itself (`created_at`). Derived, so a new column needs no edit here.
 */
const STORED = storedColumns(requests).filter((c) => !hasServerDefault(c.column));
const REQUEST_COLUMNS = STORED.map((c) => c.name);

/**
 * The table's literal defaults (project, status, pricing, is_probe). The insert names every column,
 * so a key the row leaves out (or null) would be NULL, not the default: it is filled in here.
 */
const DEFAULTS = [...literalDefaults(requests)];

/** The row itself when it names every defaulted column (rows from toRequestRow do), else a copy with the defaults. */
function withDefaults(r: RequestRow): RequestRow {
  for (const [name] of DEFAULTS) {
    if (r[name as keyof RequestRow] == null) return fillDefaults(r);
  }
  return r;
}

function fillDefaults(r: RequestRow): RequestRow {
  const out: Record<string, unknown> = { ...r };
  for (const [name, value] of DEFAULTS) out[name] ??= value;
  return out as RequestRow;
}

const columnList = sql.raw(REQUEST_COLUMNS.join(", "));

/**
 * One Postgres array literal per column (`{"a","b",NULL}`), sent as one parameter each and unnested
 * into rows: Postgres reads each value with its column type's input function and nothing else. The
 * rows as one JSON array (json_populate_recordset) cost it a JSON validation, a second parse and a
 * hash of every object's keys per row: 600 gateway rows in a loop, backend CPU 20.0 -> 14.7 ms for the
 * insert; through the whole ingest transaction ≈ 20.0 -> 18.5 us per row, and Node builds the arrays
 * for less than JSON.stringify of the rows (2026-11-24, docs/PERFORMANCE.md). A value is written as
 * the JSON payload carried it: a Date as its ISO string, a non-finite number or an invalid Date as
 * NULL, a boolean as true/false, a json/jsonb column's value as its JSON text; every other element
 * is quoted, so a string is never read as NULL (test/ingest/store-columns.test.ts).
 */
function columnArrays(rows: readonly RequestRow[]): string[] {
  const out: string[] = [];
  const parts: string[] = new Array(rows.length);
  for (const { name, json } of ARRAY_COLUMNS) {
    // Most columns repeat one value down a batch (model, provider, project, status, tenant, nulls):
    // the same value (or object) as the row before is not encoded again. undefined encodes as NULL.
    let last: unknown;
    let lastText = "NULL";
    for (let i = 0; i < rows.length; i++) {
      const v = (rows[i] as Record<string, unknown>)[name];
      if (v !== last) {
        last = v;
        lastText = json ? jsonElement(v) : arrayElement(v);
      }
      parts[i] = lastText;
    }
    out.push(`{${parts.join(",")}}`);
  }
  return out;
}

/** The columns in order; a json/jsonb column's values are always sent as their JSON text. */
const ARRAY_COLUMNS = STORED.map((c) => ({ name: c.name, json: /^jsonb?$/.test(recordsetType(c.column)) }));

const NEEDS_ESCAPE = /["\\]/;
const quoted = (s: string) => (NEEDS_ESCAPE.test(s) ? `"${s.replace(/["\\]/g, "\\$&")}"` : `"${s}"`);

/** A value of a scalar column as the JSON payload carried it (a boolean as true/false, as JSON spells it). */
function arrayElement(v: unknown): string {
  if (v === null || v === undefined) return "NULL";
  if (typeof v === "string") return quoted(v);
  if (typeof v === "number") return Number.isFinite(v) ? String(v) : "NULL";
  if (typeof v === "boolean") return v ? "true" : "false";
  if (v instanceof Date) return Number.isNaN(v.getTime()) ? "NULL" : v.toISOString();
  return quoted(JSON.stringify(v));
}

/** A json/jsonb column's value: its JSON text, whatever its JS type (a string becomes a JSON string). */
function jsonElement(v: unknown): string {
  if (v === null || v === undefined) return "NULL";
  const text = JSON.stringify(v);
  return text === undefined ? "NULL" : quoted(text);
}

/**
 * `(SELECT unnest($1::uuid[]) AS id, unnest($2::timestamptz[]) AS ts, …) AS src` over the column
 * arrays: unnests in the select list stream their rows (a ProjectSet node), where one multi-array
 * `unnest(…) AS src(…)` in FROM is a function scan that first copies every row into a tuplestore.
 * Postgres CPU per stored gateway row (1,600-row batches, two sets of 5 alternating runs): median
 * 13.9 / 14.4 -> 12.2 / 12.0 us. The arrays always have one length, so the unnests zip row by row.
 * Each column's array fills the placeholder named after the column.
 */
function unnestColumns() {
  const args = STORED.map((c) => sql`unnest(${sql.placeholder(c.name)}::${sql.raw(recordsetType(c.column))}[]) AS ${sql.raw(c.name)}`);
  return sql`(SELECT ${sql.join(args, sql`, `)}) AS src`;
}

/**
 * The same columns read from the unnested arrays, except that a record from a room whose call is marked
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
 * a multi-row insert (unnest of one array per column, ON CONFLICT (id, tenant_id) DO NOTHING) whose RETURNING feeds
 * the session upsert in the same statement, then the rollups from exactly the rows inserted.
 * Returns the rows actually inserted. Rows are sorted by id so concurrent overlapping batches take
 * row locks in the same order (no deadlock); deadlocks that still happen are retried.
 */
export async function storeRequestRows(db: Db, tenantId: string | null, rows: RequestRow[], within?: (tx: Db) => Promise<void>): Promise<RequestRow[]> {
  if (rows.length === 0 && !within) return [];
  const sorted = rows.map(withDefaults).sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  // The rows are already keyed by column name: one array literal per column.
  const arrays = columnArrays(sorted);
  const values: Record<string, unknown> = { tenant: tenantId };
  STORED.forEach((c, i) => {
    values[c.name] = arrays[i];
  });
  return withRetry(() =>
    db.transaction(async (tx) => {
      const insertedIds = rows.length === 0 ? [] : rowsOf<{ id: string; is_probe: boolean }>(await insertRequests(tx, values));
      // The caller's other rows of the same batch (the OTLP receiver's turns and spans): one transaction
      // per export, taken after the requests' session rows and before the rollups' locks.
      if (within) await within(tx);
      if (insertedIds.length === 0) return [];
      const probe = new Map(insertedIds.map((r) => [r.id, r.is_probe]));
      const inserted: RequestRow[] = [];
      for (const r of sorted) {
        const isProbe = probe.get(r.id);
        if (isProbe === undefined) continue;
        // Copied only when the insert marked it probe (a probe call's room), as the rollups must key it.
        inserted.push(isProbe === r.is_probe ? r : { ...r, is_probe: isProbe });
      }
      // Turns that arrived before their session named its agent now count toward it (GET /api/agents).
      const agentSessions = new Set<string>();
      for (const r of inserted) if (r.agent_id && r.session_id) agentSessions.add(r.session_id);
      await attachTurns(tx, tenantId, { sessionIds: [...agentSessions].sort() });
      // Last: the rollups take the hottest row locks, held from here to COMMIT (see applyRequestRollups).
      await applyRequestRollups(tx, inserted);
      return inserted;
    }),
  );
}

/**
 * Name of the prepared statement below: its text is constant (tenant and payload are parameters), so
 * Postgres parses and plans the CTE once per connection, not once per batch. Bump on any text change.
 */
const INSERT_STATEMENT_NAME = "voxgate_ingest_requests_v6";

/**
 * The insert, and the fold of newly inserted rows into their sessions (created on first sight).
 * Only rows the insert returned count, so a duplicate never counts twice. Money is summed in SQL;
 * a session's project is the first non-`default` project its records name; a new session without
 * a room in its records takes the room its turns or dead-air rows already named. Ids are unique per
 * tenant (the conflict targets include tenant_id, NULLS NOT DISTINCT): another tenant's request or
 * session with the same id is neither touched nor reported as a duplicate. An upserted session that
 * starts before today's UTC day bumps its agent's sessions version (the cached span counts of
 * GET /api/agents are checked against it: src/db/schema/fleet-index-agent-session-versions.ts), in
 * agent order so two batches lock the versions alike.
 */
function insertWithSessions(tenantId: Placeholder) {
  return sql`
    WITH ins AS (
      INSERT INTO requests (${columnList})
      SELECT ${selectList} FROM ${unnestColumns()}
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
      RETURNING s.agent_id, s.started_at
    ), bumped AS (
      INSERT INTO fleet_index_agent_session_versions AS v (tenant_id, agent_id)
      SELECT DISTINCT ${tenantId}::text, u.agent_id FROM upserted u
       WHERE u.agent_id IS NOT NULL AND u.started_at < date_trunc('day', now(), 'UTC')
       ORDER BY 2
      ON CONFLICT (agent_id, tenant_id) DO UPDATE SET version = v.version + 1
    )
    SELECT id, is_probe FROM ins`;
}

/** The statement, its text built once: each batch fills `tenant` and one array per column, by column name. */
const insertRequests = namedStatement(INSERT_STATEMENT_NAME, () => insertWithSessions(sql.placeholder("tenant")));
