import { type SQL, sql } from "drizzle-orm";

/**
 * What retention removes, table by table: the raw per-call tables (retention.raw_days), the rollups
 * (rollup_days) and the audit log (audit_days). Each entry says how a row's age is read (`older`, a
 * predicate over the cutoff) and how a day is named for the plan (`day`, a UTC date expression).
 * Milliseconds columns (turns, dead air, calls) are the agent's or LiveKit's epoch ms.
 */

export type RetentionClass = "raw" | "rollup" | "audit";

export interface RetentionTable {
  table: string;
  class: RetentionClass;
  /** Rows older than the cutoff (a timestamptz parameter, and its epoch ms). */
  older: (cutoff: Date) => SQL;
  /** The row's UTC day, for the plan's per-day counts. */
  day: SQL;
}

const tsOlder = (col: string) => (cutoff: Date) => sql`${sql.raw(col)} < ${cutoff.toISOString()}::timestamptz`;
const msOlder = (col: string) => (cutoff: Date) => sql`${sql.raw(col)} < ${cutoff.getTime()}`;
const tsDay = (col: string) => sql.raw(`date_trunc('day', ${col}, 'UTC')`);
const msDay = (col: string) => sql.raw(`date_trunc('day', to_timestamp(${col} / 1000.0), 'UTC')`);

const byTs = (table: string, cls: RetentionClass, col: string): RetentionTable => ({ table, class: cls, older: tsOlder(col), day: tsDay(col) });
const byMs = (table: string, col: string): RetentionTable => ({ table, class: "raw", older: msOlder(col), day: msDay(col) });
/**
 * call_events by its partition key, the event's own second, so whole days go with their partition; an
 * event that came without one (filed under 0, src/calls/upsert.ts) by its arrival. Clamped for the day:
 * LiveKit's createdAt is unchecked (a far-future or negative one lands in the default partition).
 */
const eventOlder = (cutoff: Date) => sql`created_at_s < ${Math.floor(cutoff.getTime() / 1000)} AND received_at < ${cutoff.toISOString()}::timestamptz`;
const eventDay = sql.raw(
  `date_trunc('day', CASE WHEN created_at_s = 0 THEN received_at ELSE to_timestamp(greatest(least(created_at_s, 1e11), -1e11)) END, 'UTC')`,
);

const ROLLUPS_BY_BUCKET = [
  "request_rollups",
  "request_rollups_daily",
  "request_model_rollups",
  "request_model_rollups_daily",
  "billing_usage_daily",
  "fleet_index_agent_rollups",
  "fleet_index_agent_rollups_daily",
];

/**
 * In deletion order: turns and dead air before the sessions they belong to (a per-project horizon
 * finds them through their session), legs and events before their calls. A session goes when its
 * last activity (`ended_at`) is past the horizon; one that straddles it stays, with the totals ingest
 * accumulated (request_count, total_cost_usd), while its requests and turns before the horizon go.
 */
export const RETENTION_TABLES: readonly RetentionTable[] = [
  byTs("requests", "raw", "ts"),
  byMs("turns", "caller_speak_start_ms"),
  byMs("dead_air_events", "started_at_ms"),
  // started_at <= ended_at: the started_at bound lets the sessions_started_idx index find them.
  { table: "sessions", class: "raw", older: (c) => sql`started_at < ${c.toISOString()}::timestamptz AND ended_at < ${c.toISOString()}::timestamptz`, day: tsDay("ended_at") },
  { table: "call_events", class: "raw", older: eventOlder, day: eventDay },
  byTs("call_legs", "raw", "updated_at"),
  byTs("calls", "raw", "updated_at"),
  byTs("node_samples", "raw", "ts"),
  // The rollups, each dated by its bucket's start.
  ...ROLLUPS_BY_BUCKET.map((t) => byTs(t, "rollup", "bucket")),
  byTs("fleet_index_agent_retired_sessions", "rollup", "day"),
  byTs("audit_log", "audit", "ts"),
];

/** The raw tables (what metrics report rows and bytes of). */
export const RAW_TABLES = RETENTION_TABLES.filter((t) => t.class === "raw").map((t) => t.table);

/**
 * A project's rows in a raw table, for a shorter per-project horizon: requests and sessions carry
 * the project; turns and dead air are found through their session (same id and tenant). Tables
 * without a project (calls, node samples) follow the global horizon only.
 */
export function projectCondition(table: string, project: string, from = table): SQL | null {
  // `from`: the table (or partition of it) the condition's rows are read from.
  const r = sql.raw(`"${from}"`);
  switch (table) {
    case "requests":
    case "sessions":
      return sql`project = ${project}`;
    case "turns":
    case "dead_air_events":
      return sql`EXISTS (SELECT 1 FROM sessions s WHERE s.id = ${r}.session_id AND s.tenant_id IS NOT DISTINCT FROM ${r}.tenant_id AND s.project = ${project})`;
    default:
      return null;
  }
}
