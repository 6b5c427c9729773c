import { sql } from "drizzle-orm";
import { type Db, queryRows, rowsOf } from "../db/client.js";
import { namedStatement } from "../db/named.js";
import { turnInsert } from "../ingest/turns.js";
import { attachTurnsSql } from "../rollups/fleet-index.js";
import { type FreshSpan, KEPT_ATTRIBUTES, type TraceIdentity } from "./map.js";
import type { Attrs } from "./spans.js";

/** Stored spans and trace rows older than this are pruned: an agent session is long over by then. */
export const OTLP_STATE_TTL_HOURS = 24;

export interface StoredSpan extends FreshSpan {
  mapped: boolean;
  /** Epoch ms the receiver stored it. */
  receivedMs: number;
}

interface TraceStateRow {
  kind: "t" | "s";
  trace_id: string;
  session_id: string;
  room_name: string | null;
  agent_id: string | null;
  span_id: string;
  parent_span_id: string | null;
  name: string;
  start_ms: number;
  end_ms: number;
  status_code: number;
  status_message: string | null;
  attributes: Attrs;
  project: string | null;
  python: boolean;
  mapped: boolean;
  received_ms: number;
}

/**
 * loadTraceState's one statement (one round trip, one pooled connection), NAMED (src/db/named.ts: parsed
 * and planned once per connection; as an unnamed statement its parse and plan cost Postgres about as
 * much as running it): the traces' stored spans (`stored`, kind 's'), the identities fixed now of the
 * traces among `first` with none (`fixed`, kind 't'), the trace rows stored before (kind 't', those
 * `fixed` did not return). A conflicting trace row that gains nothing is not updated (no write): the
 * snapshot's copy is read. Every read probes an index once per trace id of the export: a LATERAL
 * subquery per id (kept one by OFFSET 0), planned for one id, where a scan of the whole table never
 * costs less than the index probe once the table holds a few pages. A `NOT EXISTS` over otlp_spans was
 * planned as an anti-join that sorted the whole table, `IN (SELECT json_array_elements_text(…))` as a
 * semi-join that scanned it (bench:otlp, 75-400 ms per batch), and `trace_id = ANY(array)` (the JSON
 * input is estimated at 100 ids) as a scan of the table until it held ~50 pages: 0.2-0.6 ms per
 * export in bench:otlp's fresh database, in both reads.
 */
const traceState = namedStatement("voxgate_otlp_trace_state", () => {
  const tenant = sql`${sql.placeholder("tenant")}::text`;
  return sql`WITH ids AS (
      SELECT json_array_elements_text(${sql.placeholder("ids")}::json) AS id
    ), stored AS (
      SELECT sp.* FROM ids CROSS JOIN LATERAL (
        SELECT trace_id, span_id, parent_span_id, name, start_ms, end_ms, status_code, status_message, attributes, project, python, mapped,
            (extract(epoch FROM created_at) * 1000)::float8 AS received_ms
          FROM otlp_spans WHERE trace_id = ids.id AND tenant_id IS NOT DISTINCT FROM ${tenant} OFFSET 0) sp
    ), fixed AS (
      INSERT INTO otlp_traces (tenant_id, trace_id, session_id, room_name, agent_id)
      SELECT ${tenant}, v.trace_id, v.session_id, v.room_name, v.agent_id
      FROM json_to_recordset(${sql.placeholder("first")}::json) AS v(trace_id text, session_id text, room_name text, agent_id text)
      WHERE v.trace_id NOT IN (SELECT trace_id FROM stored)
      ORDER BY v.trace_id
      ON CONFLICT ON CONSTRAINT otlp_traces_trace_tenant_uq DO UPDATE SET
        room_name = COALESCE(otlp_traces.room_name, excluded.room_name),
        agent_id = COALESCE(otlp_traces.agent_id, excluded.agent_id)
      WHERE (otlp_traces.room_name IS NULL AND excluded.room_name IS NOT NULL) OR (otlp_traces.agent_id IS NULL AND excluded.agent_id IS NOT NULL)
      RETURNING trace_id, session_id, room_name, agent_id
    )
    SELECT 't' AS kind, trace_id, session_id, room_name, agent_id, NULL::text AS span_id, NULL::text AS parent_span_id, NULL::text AS name,
        NULL::float8 AS start_ms, NULL::float8 AS end_ms, NULL::int AS status_code, NULL::text AS status_message, NULL::jsonb AS attributes,
        NULL::text AS project, NULL::boolean AS python, NULL::boolean AS mapped, NULL::float8 AS received_ms
      FROM fixed
    UNION ALL
    SELECT 't', tr.trace_id, tr.session_id, tr.room_name, tr.agent_id, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL
      FROM ids CROSS JOIN LATERAL (SELECT trace_id, session_id, room_name, agent_id FROM otlp_traces
        WHERE trace_id = ids.id AND tenant_id IS NOT DISTINCT FROM ${tenant} OFFSET 0) tr
      WHERE tr.trace_id NOT IN (SELECT trace_id FROM fixed)
    UNION ALL
    SELECT 's', trace_id, NULL, NULL, NULL, span_id, parent_span_id, name, start_ms, end_ms, status_code, status_message, attributes, project,
        python, mapped, received_ms
      FROM stored`;
});

/**
 * The traces' fixed identities and their spans from earlier batches, by trace id. `firstSight`: the
 * identities this export names for traces it may be the first to see (their spans name the session or
 * close it); those of traces with no stored span are fixed in the same statement (as
 * fixTraceIdentities does: the stored one wins, a room or agent learnt later fills a gap), so a new
 * trace costs no second round trip. A trace with stored spans is left to the caller, which maps its
 * identity from all its spans (fixTraceIdentities).
 */
export async function loadTraceState(
  db: Db,
  tenantId: string | null,
  traceIds: string[],
  firstSight: ReadonlyMap<string, TraceIdentity> = new Map(),
): Promise<{ identities: Map<string, TraceIdentity>; spans: Map<string, StoredSpan[]> }> {
  const rows = rowsOf<TraceStateRow>(
    await traceState(db, { tenant: tenantId, first: identitiesJson(firstSight), ids: JSON.stringify(traceIds) }),
  );
  const traceRows = rows.filter((r) => r.kind === "t");
  const spanRows = rows.filter((r) => r.kind === "s");
  const identities = new Map(traceRows.map((r) => [r.trace_id, { sessionId: r.session_id, roomName: r.room_name, agentId: r.agent_id }]));
  const spans = new Map<string, StoredSpan[]>();
  for (const r of spanRows) {
    const span: StoredSpan = {
      traceId: r.trace_id,
      spanId: r.span_id,
      parentSpanId: r.parent_span_id,
      name: r.name,
      startMs: Number(r.start_ms),
      endMs: Number(r.end_ms),
      statusCode: Number(r.status_code),
      statusMessage: r.status_message ?? "",
      attributes: r.attributes ?? {},
      project: r.project,
      python: r.python,
      mapped: r.mapped,
      receivedMs: Number(r.received_ms),
    };
    const list = spans.get(r.trace_id);
    if (list) list.push(span);
    else spans.set(r.trace_id, [span]);
  }
  return { identities, spans };
}

/**
 * Fixes each trace's identity on first sight (a concurrent batch of the same trace gets the winner's
 * session), and fills a room or agent learnt later. Returns the identities as stored.
 */
export async function fixTraceIdentities(db: Db, tenantId: string | null, wanted: Map<string, TraceIdentity>): Promise<Map<string, TraceIdentity>> {
  if (wanted.size === 0) return new Map();
  const payload = identitiesJson(wanted);
  const rows = await queryRows<{ trace_id: string; session_id: string; room_name: string | null; agent_id: string | null }>(
    db,
    sql`INSERT INTO otlp_traces (tenant_id, trace_id, session_id, room_name, agent_id)
        SELECT ${tenantId}::text, v.trace_id, v.session_id, v.room_name, v.agent_id
        FROM json_to_recordset(${payload}::json) AS v(trace_id text, session_id text, room_name text, agent_id text)
        ON CONFLICT ON CONSTRAINT otlp_traces_trace_tenant_uq DO UPDATE SET
          room_name = COALESCE(otlp_traces.room_name, excluded.room_name),
          agent_id = COALESCE(otlp_traces.agent_id, excluded.agent_id)
        RETURNING trace_id, session_id, room_name, agent_id`,
  );
  return new Map(rows.map((r) => [r.trace_id, { sessionId: r.session_id, roomName: r.room_name, agentId: r.agent_id }]));
}

/** Identities by trace as one JSON parameter, in trace order (the order rows are locked in). */
function identitiesJson(identities: ReadonlyMap<string, TraceIdentity>): string {
  return JSON.stringify(
    [...identities]
      .sort(([a], [b]) => (a < b ? -1 : 1))
      .map(([trace_id, i]) => ({ trace_id, session_id: i.sessionId, room_name: i.roomName, agent_id: i.agentId })),
  );
}

/**
 * The export's turns (insertNumberedTurns) and span writes in ONE named statement: the batch's spans
 * to keep are inserted (re-sent spans are no-ops), marked mapped when their trace is mapped now, and
 * the stored spans of traces that waited for their session (mapped now) are marked mapped, in CTEs of
 * the turns' insert (which reads the placeholder "turns"). The span rows are the export's traces'
 * alone (claimed by receiveTraces), so when that statement locks them does not matter. The update of
 * waited spans finds them as loadTraceState does, an index probe per trace id (none for an empty
 * list), then each row by its ctid: as `trace_id = ANY(…)` the plan a connection cached while
 * otlp_spans was nearly empty (a new deployment's first minutes, every bench:otlp run) scanned the
 * whole table on every export for that connection's life (6.7 ms a group after six seconds of
 * bench:otlp's interleaved shape, and growing). The batch's sessions' earlier turns are attributed
 * to their agents here too (the fleet index's attach, `attached`, over the placeholder "sessions"), a
 * round trip less than ingest's own attach statement, which the receiver then skips
 * (CallerWrites.sessionTurnsAttached): the UPDATE sees the sessions as the batch's insert statement
 * left them, and not the turns inserted beside it, which take their agent as they are inserted.
 */
export const insertTurnsAndSpans = namedStatement("voxgate_otlp_turns_spans", () => {
  const tenant = sql`${sql.placeholder("tenant")}::text`;
  return sql`WITH kept AS (
      INSERT INTO otlp_spans (tenant_id, trace_id, span_id, parent_span_id, name, start_ms, end_ms, status_code, status_message,
        attributes, project, python, mapped)
      SELECT ${tenant}, v.trace_id, v.span_id, v.parent_span_id, v.name, v.start_ms, v.end_ms, v.status_code, v.status_message,
        v.attributes, v.project, v.python, v.mapped
      FROM json_to_recordset(${sql.placeholder("spans")}::json) AS v(trace_id text, span_id text, parent_span_id text, name text, start_ms float8,
        end_ms float8, status_code int, status_message text, attributes jsonb, project text, python boolean, mapped boolean)
      ON CONFLICT ON CONSTRAINT otlp_spans_span_tenant_uq DO NOTHING
    ), waited AS (
      UPDATE otlp_spans o SET mapped = true
      FROM (SELECT sp.ctid AS row FROM json_array_elements_text(${sql.placeholder("waited")}::json) AS ids(trace_id)
        CROSS JOIN LATERAL (SELECT ctid FROM otlp_spans WHERE trace_id = ids.trace_id AND tenant_id IS NOT DISTINCT FROM ${tenant} AND NOT mapped OFFSET 0) sp) w
      WHERE o.ctid = w.row
    ), attached AS (
      ${attachTurnsSql()}
    ), fresh AS (
      ${turnInsert(sql.placeholder("turns"))}
    )
    SELECT *, false AS attached FROM fresh
    UNION ALL SELECT *, true FROM attached`;
});

/**
 * insertTurnsAndSpans' values but the turns: the spans to keep, marked mapped when their trace is in
 * `mappedTraces`, the traces in `waitedTraces` whose stored spans are mapped now, and the sessions
 * whose earlier turns are attributed (`sessions`: the sessions of the batch's records that name an
 * agent, as ingest's attach takes them).
 */
export function spanValues(
  tenantId: string | null,
  spans: readonly FreshSpan[],
  mappedTraces: ReadonlySet<string>,
  waitedTraces: ReadonlySet<string>,
  sessions: ReadonlySet<string>,
) {
  // In (trace, span) order, so two exports that both carry a re-sent span lock its key alike.
  const sorted = [...spans].sort((a, b) => (a.traceId < b.traceId ? -1 : a.traceId > b.traceId ? 1 : a.spanId < b.spanId ? -1 : a.spanId > b.spanId ? 1 : 0));
  const rows = sorted.map((s) => ({
    trace_id: s.traceId,
    span_id: s.spanId,
    parent_span_id: s.parentSpanId,
    name: s.name,
    start_ms: s.startMs,
    end_ms: s.endMs,
    status_code: s.statusCode,
    status_message: s.statusMessage || null,
    attributes: keptAttributes(s.attributes),
    project: s.project,
    python: s.python,
    mapped: mappedTraces.has(s.traceId),
  }));
  return { tenant: tenantId, spans: JSON.stringify(rows), waited: JSON.stringify([...waitedTraces].sort()), sessions: JSON.stringify([...sessions].sort()) };
}

/** Only the attributes mapping reads; an empty transcript is kept as such (it marks the closing turn), no other content. */
function keptAttributes(a: Attrs): Attrs {
  const out: Attrs = {};
  for (const [key, v] of Object.entries(a)) {
    if (KEPT_ATTRIBUTES.has(key) && (typeof v === "string" || typeof v === "number" || typeof v === "boolean")) out[key] = v;
  }
  if (a["lk.pii.user_transcript"] === "") out["lk.pii.user_transcript"] = "";
  return out;
}

/** Drops pairing state older than OTLP_STATE_TTL_HOURS. */
export async function pruneTraceState(db: Db): Promise<void> {
  const cutoff = sql`now() - make_interval(hours => ${OTLP_STATE_TTL_HOURS})`;
  await db.execute(sql`DELETE FROM otlp_spans WHERE created_at < ${cutoff}`);
  await db.execute(sql`DELETE FROM otlp_traces WHERE created_at < ${cutoff}`);
}
