import { type Placeholder, type SQL, sql } from "drizzle-orm";
import { type Db, rowsOf } from "../db/client.js";
import { namedStatement } from "../db/named.js";
import { formatMoney, parseMoney } from "../money.js";
import { addSample, emptySketch, type LatencySketch, mergeSketch } from "../stats/summary.js";
import type { RequestRow } from "../db/schema/requests.js";
import { DAY_MS, HOUR_MS, monthStartMs } from "./buckets.js";
import { adjustCheckpointMoney, foldIntoCheckpoints } from "./fleet-checkpoints.js";
import { type AgentAcc, FLEET_MODALITIES, type FleetModality, type TurnFold } from "./agent-acc.js";
import { ALL_SAMPLES, type BatchSamples, leftOutSamplesSql, mergeSketchSql } from "./sketch-json.js";
import type { RequestProjection } from "./projection.js";

export { type AgentAcc, FLEET_MODALITIES, type FleetModality, type TurnFold } from "./agent-acc.js";

/**
 * The per-agent rollups of GET /api/agents (src/db/schema/fleet-index-agent-rollups.ts), kept on the
 * same write paths as the request rollups: ingest folds new request rows in (fleetIndexProjection),
 * turn ingest folds turns whose session names an agent,
 * re-rating moves money (adjustRollupMoney), and rebuildRollups rebuilds them from raw rows in SQL
 * (src/rollups/fleet-index-rebuild.ts; the parity test holds the two to the same rows). Rows dated
 * before today also move the ranking's running totals (src/rollups/fleet-checkpoints.ts).
 */


/** Maps a time (epoch ms) to its bucket's start. */
type BucketOf = (ms: number) => number;

/**
 * Hour, day and calendar month (months are not a fixed number of ms, hence a function per grain). The
 * month grain keeps sums only (no sketches): see src/db/schema/fleet-index-agent-rollups.ts.
 */
export const FLEET_INDEX_GRAINS = [
  { table: "fleet_index_agent_rollups", unit: "hour", sketches: true, bucketOf: (ms: number) => Math.floor(ms / HOUR_MS) * HOUR_MS },
  { table: "fleet_index_agent_rollups_daily", unit: "day", sketches: true, bucketOf: (ms: number) => Math.floor(ms / DAY_MS) * DAY_MS },
  { table: "fleet_index_agent_rollups_monthly", unit: "month", sketches: false, bucketOf: monthStartMs },
] as const satisfies readonly { table: string; unit: string; sketches: boolean; bucketOf: BucketOf }[];

/** A text[] from one JSON parameter (a JS array would be spread into one parameter per element). */
export function textArray(values: string[]): SQL {
  return sql`ARRAY(SELECT json_array_elements_text(${JSON.stringify(values)}::json))`;
}

const isFleetModality = (m: string): m is FleetModality => (FLEET_MODALITIES as readonly string[]).includes(m);

/** An empty accumulator. */
export function emptyAgentAcc(bucket: Date, tenantId: string | null, agentId: string): AgentAcc {
  return {
    bucket,
    tenantId,
    agentId,
    requests: 0,
    probeRequests: 0,
    errors: 0,
    cost: 0n,
    rated: 0n,
    ttfb: { stt: emptySketch(), llm: emptySketch(), tts: emptySketch() },
    turns: 0,
    probeTurns: 0,
    response: emptySketch(),
  };
}

/** A (tenant, agent) pair as a map key (NUL never occurs in Postgres text; "=" tells a tenant from none). */
export const agentPairKey = (tenantId: string | null, agentId: string) => `${tenantId === null ? "" : `=${tenantId}`}\u0000${agentId}`;

/** Key string; sorting these is the lock order. */
const keyOf = (bucketMs: number, tenantId: string | null, agentId: string) => `${String(bucketMs).padStart(15, "0")}\u0000${agentPairKey(tenantId, agentId)}`;

/** Per-agent accumulators at one grain, filled from request rows and turns. */
export class AgentRollupBatch {
  readonly byKey = new Map<string, AgentAcc>();
  /** The accumulator of the row before: a batch is mostly runs of one agent and hour. */
  private last: { bucketMs: number; acc: AgentAcc } | null = null;
  constructor(readonly bucketOf: BucketOf) {}

  private acc(ms: number, tenantId: string | null, agentId: string): AgentAcc {
    const bucketMs = this.bucketOf(ms);
    const last = this.last;
    if (last !== null && last.bucketMs === bucketMs && last.acc.agentId === agentId && last.acc.tenantId === tenantId) return last.acc;
    const key = keyOf(bucketMs, tenantId, agentId);
    let a = this.byKey.get(key);
    if (!a) {
      a = emptyAgentAcc(new Date(bucketMs), tenantId, agentId);
      this.byKey.set(key, a);
    }
    this.last = { bucketMs, acc: a };
    return a;
  }

  /** A request row as stored (defaults applied as the requests table applies them). */
  addRequest(row: RequestRow): void {
    if (row.agent_id === null || row.agent_id === undefined) return;
    const ts = row.ts instanceof Date ? row.ts.getTime() : new Date(row.ts).getTime();
    const a = this.acc(ts, row.tenant_id ?? null, row.agent_id);
    a.requests += 1;
    a.cost += parseMoney(row.cost_usd);
    a.rated += parseMoney(row.rated_price_usd);
    if (row.is_probe ?? false) {
      a.probeRequests += 1;
      return;
    }
    if ((row.status ?? "success") === "error") a.errors += 1;
    if (row.ttfb_ms !== null && row.ttfb_ms !== undefined && isFleetModality(row.modality)) addSample(a.ttfb[row.modality], row.ttfb_ms);
  }

  addTurn(t: TurnFold): void {
    const a = this.acc(t.startMs, t.tenantId, t.agentId);
    if (t.isProbe) {
      a.probeTurns += 1;
      return;
    }
    a.turns += 1;
    if (t.responseSpeedMs !== null) addSample(a.response, t.responseSpeedMs);
  }

  /** Accumulators sorted by key: the order rows are upserted (and locked) in. */
  sorted(): AgentAcc[] {
    return [...this.byKey.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, v]) => v);
  }
}

/** Merges accumulators (for totals across buckets): counts and money add, sketches merge. */
export function mergeAgentAcc(into: AgentAcc, from: AgentAcc): void {
  into.requests += from.requests;
  into.probeRequests += from.probeRequests;
  into.errors += from.errors;
  into.cost += from.cost;
  into.rated += from.rated;
  for (const m of FLEET_MODALITIES) mergeSketch(into.ttfb[m], from.ttfb[m]);
  into.turns += from.turns;
  into.probeTurns += from.probeTurns;
  mergeSketch(into.response, from.response);
}

const COLUMNS = [
  ["bucket", "timestamptz"],
  ["tenant_id", "text"],
  ["agent_id", "text"],
  ["requests", "bigint"],
  ["probe_requests", "bigint"],
  ["errors", "bigint"],
  ["cost_usd", "numeric"],
  ["rated_price_usd", "numeric"],
  ["stt_ttfb_hist", "jsonb"],
  ["llm_ttfb_hist", "jsonb"],
  ["tts_ttfb_hist", "jsonb"],
  ["turns", "bigint"],
  ["probe_turns", "bigint"],
  ["response_hist", "jsonb"],
] as const;
const SUMMED = ["requests", "probe_requests", "errors", "cost_usd", "rated_price_usd", "turns", "probe_turns"] as const;
/** The sketch columns, in table order. */
export const SKETCHES = ["stt_ttfb_hist", "llm_ttfb_hist", "tts_ttfb_hist", "response_hist"] as const;

/** A sketch as stored: null when empty. */
export const storedSketch = (s: LatencySketch) => (s.count === 0 ? null : s);

/**
 * An accumulator as one json_to_recordset row. `table`: the grain's, naming its sketches for
 * `samples` (src/rollups/sketch-json.ts).
 */
function jsonRow(a: AgentAcc, withSketches: boolean, table: string, samples: BatchSamples) {
  const sums = {
    bucket: a.bucket.toISOString(),
    tenant_id: a.tenantId,
    agent_id: a.agentId,
    requests: a.requests,
    probe_requests: a.probeRequests,
    errors: a.errors,
    cost_usd: formatMoney(a.cost),
    rated_price_usd: formatMoney(a.rated),
    turns: a.turns,
    probe_turns: a.probeTurns,
  };
  if (!withSketches) return sums;
  const key = `${table}\u0001${keyOf(a.bucket.getTime(), a.tenantId, a.agentId)}\u0001`;
  const sketch = (name: string, s: LatencySketch) => (s.count === 0 ? null : samples.sketch(key + name, s));
  return {
    ...sums,
    stt_ttfb_hist: sketch("stt", a.ttfb.stt),
    llm_ttfb_hist: sketch("llm", a.ttfb.llm),
    tts_ttfb_hist: sketch("tts", a.ttfb.tts),
    response_hist: sketch("response", a.response),
  };
}

/** One grain's INSERT … ON CONFLICT DO UPDATE from a JSON array of rows (a value, or a placeholder). */
function upsertSql(table: string, withSketches: boolean, rowsJson: string | Placeholder): SQL {
  const t = sql.raw(table);
  const columns = COLUMNS.filter(([, ty]) => withSketches || ty !== "jsonb");
  const names = sql.raw(columns.map(([c]) => c).join(", "));
  const types = sql.raw(columns.map(([c, ty]) => `${c} ${ty}`).join(", "));
  const col = (c: string) => sql.raw(`${table}.${c}`);
  const sets = [
    ...SUMMED.map((c) => sql`${sql.raw(c)} = ${col(c)} + excluded.${sql.raw(c)}`),
    ...(withSketches ? SKETCHES : []).map((c) => sql`${sql.raw(c)} = ${mergeSketchSql(col(c), sql`excluded.${sql.raw(c)}`)}`),
  ];
  return sql`INSERT INTO ${t} (${names})
    SELECT ${names} FROM json_to_recordset(${rowsJson}::json) AS v(${types})
    ON CONFLICT (bucket, tenant_id, agent_id) DO UPDATE SET ${sql.join(sets, sql`, `)}`;
}

const rowsJson = (accs: AgentAcc[], withSketches: boolean, table: string, samples: BatchSamples) =>
  JSON.stringify(accs.map((a) => jsonRow(a, withSketches, table, samples)));

/**
 * Upserts one batch into every grain (hour, day, month: the one table order every writer follows).
 * Returns the hour grain's accumulators: rows dated before today also move the fleet-index checkpoints,
 * whose spans start at an hour.
 */
async function write(tx: Db, fill: (b: AgentRollupBatch) => void): Promise<AgentAcc[]> {
  let byHour: AgentAcc[] = [];
  for (const grain of FLEET_INDEX_GRAINS) {
    const batch = new AgentRollupBatch(grain.bucketOf);
    fill(batch);
    const accs = batch.sorted();
    if (grain.unit === "hour") byHour = accs;
    if (accs.length > 0) await tx.execute(upsertSql(grain.table, grain.sketches, rowsJson(accs, grain.sketches, grain.table, ALL_SAMPLES())));
  }
  return byHour;
}

/**
 * The rows of the per-agent upserts (fleetIndexProjection's fold) for a batch of stored request rows (exactly those inserted)
 * and of turns attributed in the same transaction, as JSON by table name (an empty array when none
 * names an agent), and the hour grain's accumulators, which fleetIndexProjection folds into the
 * fleet-index checkpoints (foldIntoCheckpoints).
 */
export function fleetIndexRequestRows(
  rows: RequestRow[],
  turns: readonly TurnFold[] = [],
  samples: BatchSamples = ALL_SAMPLES(),
): { rowsByTable: Record<string, string>; byHour: AgentAcc[] } {
  // One pass over the rows at the finest grain (hour); the day and month grains fold the hours'
  // accumulators (counts and money add exactly, sketches merge: as aggregating the rows again).
  const hourly = new AgentRollupBatch(FLEET_INDEX_GRAINS[0].bucketOf);
  for (const r of rows) if (r.agent_id !== null && r.agent_id !== undefined) hourly.addRequest(r);
  for (const t of turns) hourly.addTurn(t);
  const byHour = hourly.sorted();
  const rowsByTable: Record<string, string> = {};
  for (const grain of FLEET_INDEX_GRAINS) {
    const accs = grain.unit === "hour" ? byHour : foldAgentAccs(byHour, grain.bucketOf);
    rowsByTable[grain.table] = rowsJson(accs, grain.sketches, grain.table, samples);
  }
  return { rowsByTable, byHour };
}

/** Hour accumulators folded into a coarser grain's buckets, sorted by key (the lock order). */
function foldAgentAccs(byHour: readonly AgentAcc[], bucketOf: BucketOf): AgentAcc[] {
  const byKey = new Map<string, AgentAcc>();
  for (const h of byHour) {
    const bucketMs = bucketOf(h.bucket.getTime());
    const key = keyOf(bucketMs, h.tenantId, h.agentId);
    let acc = byKey.get(key);
    if (!acc) {
      acc = emptyAgentAcc(new Date(bucketMs), h.tenantId, h.agentId);
      byKey.set(key, acc);
    }
    mergeAgentAcc(acc, h);
  }
  return [...byKey.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, v]) => v);
}

/**
 * The fleet index projection (src/rollups/projection.ts). After the insert: turns that arrived before
 * their session named its agent now count toward it (attachTurns, sessions in id order). In the fold
 * statement, first (re-rating's adjustRollupMoney moves money in the same table order): the per-agent
 * rollups, hour, day, month, keys sorted, of the request rows and of the turns the batch attributed
 * (the OTLP receiver's: one upsert per grain, the agent's rows locked only from here to COMMIT).
 * After it: rows dated before today may be inside a built fleet-index checkpoint, which moves too
 * (usually none; the checkpoints' advisory lock, shared).
 */
export const fleetIndexProjection: RequestProjection = {
  name: "fleet index",
  async afterInsert(tx, tenantId, inserted, caller) {
    if (caller.sessionTurnsAttached) return;
    const agentSessions = new Set<string>();
    for (const r of inserted) if (r.agent_id && r.session_id) agentSessions.add(r.session_id);
    await attachTurns(tx, tenantId, [...agentSessions].sort());
  },
  fold: {
    upserts: () =>
      FLEET_INDEX_GRAINS.map((grain) => ({
        name: grain.table,
        sql: upsertSql(grain.table, grain.sketches, sql.placeholder(grain.table)),
        ...(grain.sketches ? { leftOut: leftOutSamplesSql(SKETCHES) } : {}),
      })),
    rows(rows, turns, samples) {
      const { rowsByTable, byHour } = fleetIndexRequestRows(rows, turns, samples);
      return { values: rowsByTable, after: (tx) => foldIntoCheckpoints(tx, byHour) };
    },
  },
};

/**
 * A turn is probe traffic when its room's call is (same rule as request rows: a call of the turn's
 * own tenant or of no tenant).
 */
export const TURN_PROBE = sql.raw(`(EXISTS (SELECT 1 FROM calls c WHERE t.room_name IS NOT NULL AND c.room_name = t.room_name AND c.is_probe
  AND (c.tenant_id IS NULL OR c.tenant_id = t.tenant_id)))`);

/** What TURN_FOLD_RETURNING returns per turn (agent_id null: its session names no agent yet). */
export interface TurnFoldRow {
  start_ms: string | number;
  tenant_id: string | null;
  agent_id: string | null;
  response_speed_ms: number | null;
  is_probe: boolean;
}

/** What a statement inserting or attributing turns (alias `t`) returns for their folds (turnFolds reads it). */
export const TURN_FOLD_RETURNING = sql`t.caller_speak_start_ms AS start_ms, t.tenant_id, t.agent_id, t.response_speed_ms, ${TURN_PROBE} AS is_probe`;

/** The folds of the returned turns that have an agent. */
export function turnFolds(rows: readonly TurnFoldRow[]): TurnFold[] {
  const out: TurnFold[] = [];
  for (const r of rows) {
    if (r.agent_id === null) continue;
    out.push({
      startMs: Number(r.start_ms),
      tenantId: r.tenant_id,
      agentId: r.agent_id,
      responseSpeedMs: r.response_speed_ms === null ? null : Number(r.response_speed_ms),
      isProbe: r.is_probe,
    });
  }
  return out;
}

/**
 * Turns that arrived before their session named its agent: attributed to the agent and folded in,
 * once (turns.agent_id is stamped in the same statement, and only turns without one are taken).
 * Request ingest calls it for the sessions of its rows; new turns are attributed as they are
 * inserted (src/ingest/turns.ts).
 */
export async function attachTurns(tx: Db, tenantId: string | null, sessionIds: string[]): Promise<void> {
  if (sessionIds.length === 0) return;
  const rows = rowsOf<TurnFoldRow>(await attachStatement(tx, { sessions: JSON.stringify(sessionIds), tenant: tenantId }));
  await foldTurns(tx, turnFolds(rows));
}

/**
 * attachTurns' UPDATE over the sessions named by the JSON array placeholder "sessions" (of the tenant
 * placeholder "tenant"); also a CTE of the OTLP receiver's turns statement (src/otlp/store.ts), which
 * attributes its batch's sessions' turns itself (CallerWrites.sessionTurnsAttached). Every batch that
 * names an agent runs it: the turns are found through turns_unattributed_session_idx, a probe per
 * session id and partition into the turns still without an agent (none, almost always). The agent
 * index leaves those turns out, so no plan can walk the whole `agent_id IS NULL` range instead: one
 * did, planned on statistics taken while every turn had its agent (50 ms a batch with 300,000
 * unattributed turns in a day partition, docs/perf/ingest.md).
 */
export const attachTurnsSql = (): SQL => sql`UPDATE turns t SET agent_id = s.agent_id
          FROM sessions s
         WHERE t.session_id = ANY(ARRAY(SELECT json_array_elements_text(${sql.placeholder("sessions")}::json)))
           AND t.tenant_id IS NOT DISTINCT FROM ${sql.placeholder("tenant")}::text AND t.agent_id IS NULL
           AND s.id = t.session_id AND s.tenant_id IS NOT DISTINCT FROM t.tenant_id AND s.agent_id IS NOT NULL
     RETURNING ${TURN_FOLD_RETURNING}`;

/**
 * attachTurns' UPDATE as a named prepared statement: every ingest batch naming an agent runs it
 * (almost always finding no turn), and as a one-off statement Postgres parsed and planned it each
 * time (~0.8 ms of its CPU per batch: turns has one partition a day, docs/perf/ingest.md).
 */
const attachStatement = namedStatement("voxgate_ingest_attach_turns", attachTurnsSql);

/** Folds attributed turns into the per-agent rollups (hour, day, month) and the checkpoints they fall in. */
export async function foldTurns(tx: Db, turns: readonly TurnFold[]): Promise<void> {
  if (turns.length === 0) return;
  const byHour = await write(tx, (batch) => {
    for (const t of turns) batch.addTurn(t);
  });
  // Turns dated before a built checkpoint move it too (src/rollups/fleet-checkpoints.ts).
  await foldIntoCheckpoints(tx, byHour);
}

/**
 * Moves re-rating money deltas into the per-agent rollups. `deltas` yields ts, tenant_id, agent_id,
 * dp (price delta), dc (cost delta); rows without an agent are not in these tables.
 */
export async function adjustFleetIndexMoney(tx: Db, deltas: SQL): Promise<void> {
  for (const grain of FLEET_INDEX_GRAINS) {
    const unit = sql.raw(`'${grain.unit}'`);
    await tx.execute(sql`
      UPDATE ${sql.raw(grain.table)} ar
         SET rated_price_usd = ar.rated_price_usd + d.dp, cost_usd = ar.cost_usd + d.dc
        FROM (SELECT date_trunc(${unit}, ts, 'UTC') AS bucket, tenant_id, agent_id, sum(dp) AS dp, sum(dc) AS dc
                FROM (${deltas}) x WHERE agent_id IS NOT NULL GROUP BY 1, 2, 3) d
       WHERE ar.bucket = d.bucket AND ar.tenant_id IS NOT DISTINCT FROM d.tenant_id AND ar.agent_id = d.agent_id`);
  }
  await adjustCheckpointMoney(tx, deltas);
}
