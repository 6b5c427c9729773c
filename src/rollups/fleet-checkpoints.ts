import { type SQL, sql } from "drizzle-orm";
import { type Db, queryRows } from "../db/client.js";
import { formatMoney } from "../money.js";
import { DAY_MS, monthStartMs } from "./buckets.js";
import type { AgentAcc } from "./fleet-index.js";

/**
 * Per-agent running totals of the fleet index's ranking (src/db/schema/fleet-index-checkpoints.ts):
 * for a UTC day start `at`, each agent's requests, cost and row count dated before it. Built on
 * demand (ensureCheckpoints) from the nearest built one plus or minus the day rollups between, and
 * kept exact afterwards by every writer of rows dated before a built `at`:
 *
 * - ingest and turn attribution fold their late rows in (foldIntoCheckpoints);
 * - re-rating moves the cost (adjustCheckpointMoney);
 * - a rebuild drops the checkpoints it may have changed (dropCheckpointsAfter).
 *
 * A builder and a writer must not miss each other: the builder reads the day rows and writes a
 * checkpoint under an exclusive advisory lock; a writer of late rows takes the same lock shared in an
 * earlier statement than the one that folds its rows in. Either the writer got the lock first (the
 * builder waits for its COMMIT and reads its rows), or the builder did (the writer's fold statement
 * starts after the builder's COMMIT and sees the new checkpoint). Rows dated today need no lock: a
 * checkpoint is only built CHECKPOINT_GRACE_MS after its day starts (src/fleet/rank-plan.ts), by which
 * time a writer that saw "today" has committed.
 */

/** The advisory lock key of checkpoint builds (exclusive) and late writers (shared): "voxc". */
const CHECKPOINT_LOCK_KEY = 0x766f7863;
/** A checkpoint this many days or fewer from a built one is stepped from it by day rows. */
const STEP_MAX_DAYS = 45;
/** Checkpoints older than this are dropped when a new one is built (windows reach back 30 days). */
const KEEP_DAYS = 40;

const dayStart = (ms: number) => Math.floor(ms / DAY_MS) * DAY_MS;
const iso = (ms: number) => new Date(ms).toISOString();
const tsArray = (ms: number[]) => sql`${`{${ms.map(iso).join(",")}}`}::timestamptz[]`;

/**
 * Folds per-agent day accumulators (one writer's rows) into every built checkpoint after their day.
 * Only accumulators dated before today's start can be before a checkpoint; none, no statement.
 */
export async function foldIntoCheckpoints(tx: Db, accs: Iterable<AgentAcc>, wallNowMs = Date.now()): Promise<void> {
  const today = dayStart(wallNowMs);
  const late = [...accs].filter((a) => a.bucket.getTime() < today);
  if (late.length === 0) return;
  await tx.execute(sql`SELECT pg_advisory_xact_lock_shared(${CHECKPOINT_LOCK_KEY})`);
  const rows = late.map((a) => ({
    bucket: a.bucket.toISOString(),
    tenant_id: a.tenantId,
    agent_id: a.agentId,
    requests: a.requests,
    cost_usd: formatMoney(a.cost),
    row_count: a.requests + a.turns + a.probeTurns,
  }));
  // Sorted on the key: the lock order of every writer of these rows.
  await tx.execute(sql`INSERT INTO fleet_index_agent_checkpoints AS c (at, tenant_id, agent_id, requests, cost_usd, row_count)
    SELECT k.at, v.tenant_id, v.agent_id, sum(v.requests), sum(v.cost_usd), sum(v.row_count)
      FROM json_to_recordset(${JSON.stringify(rows)}::json)
           AS v(bucket timestamptz, tenant_id text, agent_id text, requests bigint, cost_usd numeric, row_count bigint)
      JOIN fleet_index_checkpoints k ON k.at > v.bucket
     GROUP BY 1, 2, 3 ORDER BY 1, 2 NULLS FIRST, 3
    ON CONFLICT (at, tenant_id, agent_id) DO UPDATE SET requests = c.requests + excluded.requests,
      cost_usd = c.cost_usd + excluded.cost_usd, row_count = c.row_count + excluded.row_count`);
}

/**
 * Moves re-rating cost deltas into the checkpoints after each row (`deltas` as adjustRollupMoney's:
 * ts, tenant_id, agent_id, dc). A re-rated row was counted in them, so its agent's rows exist.
 */
export async function adjustCheckpointMoney(tx: Db, deltas: SQL): Promise<void> {
  await tx.execute(sql`SELECT pg_advisory_xact_lock_shared(${CHECKPOINT_LOCK_KEY})`);
  await tx.execute(sql`
    UPDATE fleet_index_agent_checkpoints c SET cost_usd = c.cost_usd + d.dc
      FROM (SELECT k.at, x.tenant_id, x.agent_id, sum(x.dc) AS dc
              FROM (${deltas}) x JOIN fleet_index_checkpoints k ON k.at > x.ts
             WHERE x.agent_id IS NOT NULL GROUP BY 1, 2, 3) d
     WHERE c.at = d.at AND c.tenant_id IS NOT DISTINCT FROM d.tenant_id AND c.agent_id = d.agent_id AND d.dc <> 0`);
}

/** Drops the checkpoints a rebuild of rollups from `from` on may have changed; queries build them again. */
export async function dropCheckpointsAfter(db: Db, from: Date): Promise<void> {
  await db.transaction(async (tx) => {
    await tx.execute(sql`SELECT pg_advisory_xact_lock(${CHECKPOINT_LOCK_KEY})`);
    await tx.execute(sql`DELETE FROM fleet_index_checkpoints WHERE at > ${from.toISOString()}::timestamptz`);
    await tx.execute(sql`DELETE FROM fleet_index_agent_checkpoints WHERE at > ${from.toISOString()}::timestamptz`);
  });
}

/** Per-agent requests, cost and row count of day rollup rows in [from, to), negated when `sign` is -1. */
function dayRows(from: number, to: number, sign: 1 | -1): SQL {
  const s = sql.raw(sign === 1 ? "" : "-");
  return sql`SELECT tenant_id, agent_id, ${s}requests AS requests, ${s}cost_usd AS cost_usd, ${s}(requests + turns + probe_turns) AS row_count
    FROM fleet_index_agent_rollups_daily WHERE bucket >= ${iso(from)}::timestamptz AND bucket < ${iso(to)}::timestamptz`;
}

/** Builds the checkpoint at `at` (under the exclusive lock): from the nearest built one, else from the month rows. */
async function buildCheckpoint(tx: Db, at: number): Promise<void> {
  const built = await queryRows<{ at: Date | string }>(
    tx,
    sql`SELECT at FROM fleet_index_checkpoints ORDER BY abs(extract(epoch FROM at - ${iso(at)}::timestamptz)), at LIMIT 1`,
  );
  const near = built[0] === undefined ? null : new Date(built[0].at).getTime();
  if (near === at) return;
  let source: SQL;
  if (near !== null && Math.abs(near - at) <= STEP_MAX_DAYS * DAY_MS) {
    const from = sql`SELECT tenant_id, agent_id, requests, cost_usd, row_count FROM fleet_index_agent_checkpoints WHERE at = ${iso(near)}::timestamptz`;
    source = sql`${from} UNION ALL ${near < at ? dayRows(near, at, 1) : dayRows(at, near, -1)}`;
  } else {
    const month = monthStartMs(at);
    source = sql`SELECT tenant_id, agent_id, requests, cost_usd, requests + turns + probe_turns AS row_count
        FROM fleet_index_agent_rollups_monthly WHERE bucket < ${iso(month)}::timestamptz
      UNION ALL ${dayRows(month, at, 1)}`;
  }
  await tx.execute(sql`INSERT INTO fleet_index_agent_checkpoints (at, tenant_id, agent_id, requests, cost_usd, row_count)
    SELECT ${iso(at)}::timestamptz, tenant_id, agent_id, sum(requests), sum(cost_usd), sum(row_count)
      FROM (${source}) s GROUP BY tenant_id, agent_id HAVING sum(row_count) > 0`);
  await tx.execute(sql`INSERT INTO fleet_index_checkpoints (at) VALUES (${iso(at)}::timestamptz)`);
}

/**
 * Makes sure the checkpoints at `days` are built (one indexed read when they are, the usual case;
 * the first query of a day builds that day's from the day before). Old ones are dropped then.
 */
export async function ensureCheckpoints(db: Db, days: Date[], wallNowMs = Date.now()): Promise<void> {
  const want = [...new Set(days.map((d) => d.getTime()))].sort((a, b) => a - b);
  if (want.length === 0) return;
  const have = await queryRows<{ at: Date | string }>(db, sql`SELECT at FROM fleet_index_checkpoints WHERE at = ANY(${tsArray(want)})`);
  const haveMs = new Set(have.map((r) => new Date(r.at).getTime()));
  const missing = want.filter((ms) => !haveMs.has(ms));
  if (missing.length === 0) return;
  await db.transaction(async (tx) => {
    await tx.execute(sql`SELECT pg_advisory_xact_lock(${CHECKPOINT_LOCK_KEY})`);
    for (const at of missing) await buildCheckpoint(tx, at);
    const keepFrom = iso(dayStart(wallNowMs) - KEEP_DAYS * DAY_MS);
    await tx.execute(sql`DELETE FROM fleet_index_checkpoints WHERE at < ${keepFrom}::timestamptz AND NOT (at = ANY(${tsArray(want)}))`);
    await tx.execute(sql`DELETE FROM fleet_index_agent_checkpoints WHERE at < ${keepFrom}::timestamptz AND NOT (at = ANY(${tsArray(want)}))`);
    // Fresh statistics for the rows just written: planned without them, the ranking estimated a few
    // hundred rows per checkpoint instead of one per agent and went parallel (2-5x slower here).
    await tx.execute(sql`ANALYZE fleet_index_agent_checkpoints`);
  });
}
