import { type SQL, sql } from "drizzle-orm";
import { type Db, queryRows } from "../db/client.js";
import { formatMoney } from "../money.js";
import { ceilTo, DAY_MS, floorTo, HOUR_MS, monthStartMs } from "./buckets.js";
import type { AgentAcc } from "./agent-acc.js";

/**
 * Per-agent running totals of the fleet index (src/db/schema/fleet-index-checkpoints.ts): for a span
 * [from, at) from a UTC hour start (-infinity: everything before `at`) to a UTC day start, each agent's
 * sums of the rows dated in it (requests, cost, row count for the ranking; probe requests, errors,
 * rated price and turns for the page). The ranking's spans start at its window's first whole hour
 * (src/fleet/rank-plan.ts), the page's at a day. Built on demand (ensureCheckpoints) from the nearest
 * built span plus or minus the hour and day rollups between, and kept exact afterwards by every
 * writer of rows dated inside a built span:
 *
 * - ingest and turn attribution fold their late rows in, an hour at a time (foldIntoCheckpoints);
 * - re-rating moves the cost and the rated price (adjustCheckpointMoney);
 * - a rebuild drops the checkpoints it may have changed (dropCheckpointsAfter).
 *
 * A builder and a writer must not miss each other: the builder reads the day rows and writes a
 * checkpoint under an exclusive advisory lock; a writer of late rows takes the same lock shared in an
 * earlier statement than the one that folds its rows in. Either the writer got the lock first (the
 * builder waits for its COMMIT and reads its rows), or the builder did (the writer's fold statement
 * starts after the builder's COMMIT and sees the new checkpoint). Rows dated today need no lock: a
 * checkpoint is only built CHECKPOINT_GRACE_MS after its day starts (ensureCheckpoints refuses an
 * earlier one; src/fleet/rank-plan.ts never asks), by which time a writer that saw "today" has committed.
 */

/**
 * A checkpoint is built only once its day started this long ago, so a writer still working on rows
 * dated before it has committed (transactions and clock skew between replicas stay below this).
 */
export const CHECKPOINT_GRACE_MS = 15 * 60_000;

/** The advisory lock key of checkpoint builds (exclusive) and late writers (shared): "voxc". */
const CHECKPOINT_LOCK_KEY = 0x766f7863;
/** A span whose bounds are this many days in all from a built one's is stepped from it by day rows. */
const STEP_MAX_DAYS = 45;
/** Checkpoints older than this are dropped when a new one is built (windows reach back 30 days). */
const KEEP_DAYS = 40;
/**
 * A span starting inside a day (a ranking's: its window's first hour) is wanted for an hour at most;
 * one built this long ago is dropped when another is built. No request reads for an hour.
 */
const HOUR_SPAN_KEEP_MS = 2 * HOUR_MS;

const dayStart = (ms: number) => floorTo(ms, DAY_MS);
const iso = (ms: number) => new Date(ms).toISOString();
/** The SQL of a span's lower bound. */
const fromSql = (ms: number | null) => (ms === null ? sql`'-infinity'::timestamptz` : sql`${iso(ms)}::timestamptz`);

/** The rows of the span [from, at) (from null: unbounded) in fleet_index_agent_checkpoints, `alias.` prefixed when given. */
export function spanRowsSql(from: Date | null, at: Date, alias?: string): SQL {
  const col = (name: string) => sql.raw(alias ? `${alias}.${name}` : name);
  return sql`${col("from_at")} = ${fromSql(from === null ? null : from.getTime())} AND ${col("at")} = ${at.toISOString()}::timestamptz`;
}

/** A span row's sums, in one order everywhere: the ranking's three, then the page's other totals. */
const SPAN_SUM_COLUMNS = ["requests", "cost_usd", "row_count", "probe_requests", "errors", "rated_price_usd", "turns", "probe_turns"] as const;
const SPAN_SUMS = sql.raw(SPAN_SUM_COLUMNS.join(", "));
const sumsOf = (prefix: string) => sql.raw(SPAN_SUM_COLUMNS.map((c) => `sum(${prefix}${c})`).join(", "));
/** A rollup row's sums in SPAN_SUM_COLUMNS order (row_count = requests + turns + probe_turns), negated when `sign` is -1. */
function rollupSums(sign: 1 | -1): SQL {
  const s = sign === 1 ? "" : "-";
  return sql.raw(SPAN_SUM_COLUMNS.map((c) => `${s}${c === "row_count" ? "(requests + turns + probe_turns)" : c} AS ${c}`).join(", "));
}

/**
 * Folds per-agent hour accumulators (one writer's rows) into every built span holding their hour
 * (spans start at an hour, so an hour is wholly in a span or out of it). Only accumulators dated
 * before today's start can be before a checkpoint; none, no statement.
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
    probe_requests: a.probeRequests,
    errors: a.errors,
    rated_price_usd: formatMoney(a.rated),
    turns: a.turns,
    probe_turns: a.probeTurns,
  }));
  // Sorted on the key: the lock order of every writer of these rows.
  await tx.execute(sql`INSERT INTO fleet_index_agent_checkpoints AS c (from_at, at, tenant_id, agent_id, ${SPAN_SUMS})
    SELECT k.from_at, k.at, v.tenant_id, v.agent_id, ${sumsOf("v.")}
      FROM json_to_recordset(${JSON.stringify(rows)}::json)
           AS v(bucket timestamptz, tenant_id text, agent_id text, requests bigint, cost_usd numeric, row_count bigint,
                probe_requests bigint, errors bigint, rated_price_usd numeric, turns bigint, probe_turns bigint)
      JOIN fleet_index_checkpoints k ON k.at > v.bucket AND k.from_at <= v.bucket
     GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3 NULLS FIRST, 4
    ON CONFLICT (from_at, at, tenant_id, agent_id) DO UPDATE SET
      ${sql.raw(SPAN_SUM_COLUMNS.map((c) => `${c} = c.${c} + excluded.${c}`).join(", "))}`);
}

/**
 * Moves re-rating cost and price deltas into the spans holding each row (`deltas` as adjustRollupMoney's:
 * ts, tenant_id, agent_id, dc, dp). A re-rated row was counted in them, so its agent's rows exist.
 */
export async function adjustCheckpointMoney(tx: Db, deltas: SQL): Promise<void> {
  await tx.execute(sql`SELECT pg_advisory_xact_lock_shared(${CHECKPOINT_LOCK_KEY})`);
  await tx.execute(sql`
    UPDATE fleet_index_agent_checkpoints c SET cost_usd = c.cost_usd + d.dc, rated_price_usd = c.rated_price_usd + d.dp
      FROM (SELECT k.from_at, k.at, x.tenant_id, x.agent_id, sum(x.dc) AS dc, sum(x.dp) AS dp
              FROM (${deltas}) x JOIN fleet_index_checkpoints k ON k.at > x.ts AND k.from_at <= x.ts
             WHERE x.agent_id IS NOT NULL GROUP BY 1, 2, 3, 4) d
     WHERE c.from_at = d.from_at AND c.at = d.at AND c.tenant_id IS NOT DISTINCT FROM d.tenant_id AND c.agent_id = d.agent_id
       AND (d.dc <> 0 OR d.dp <> 0)`);
}

/** Drops the spans a rebuild of rollups from `from` on may have changed (those ending after it); queries build them again. */
export async function dropCheckpointsAfter(db: Db, from: Date): Promise<void> {
  await db.transaction(async (tx) => {
    await tx.execute(sql`SELECT pg_advisory_xact_lock(${CHECKPOINT_LOCK_KEY})`);
    await tx.execute(sql`DELETE FROM fleet_index_checkpoints WHERE at > ${from.toISOString()}::timestamptz`);
    await tx.execute(sql`DELETE FROM fleet_index_agent_checkpoints WHERE at > ${from.toISOString()}::timestamptz`);
  });
}

/** Per-agent sums of the hour or day rollup rows in [from, to), negated when `sign` is -1. */
function rollupRows(table: "fleet_index_agent_rollups" | "fleet_index_agent_rollups_daily", from: number, to: number, sign: 1 | -1): SQL {
  return sql`SELECT tenant_id, agent_id, ${rollupSums(sign)}
    FROM ${sql.raw(table)} WHERE bucket >= ${iso(from)}::timestamptz AND bucket < ${iso(to)}::timestamptz`;
}

/** The rows dated in [from, to) (hour starts): whole days from the day rows, the hours around them from the hour rows. */
function rowsBetween(from: number, to: number, sign: 1 | -1): SQL[] {
  const d0 = ceilTo(from, DAY_MS);
  const d1 = dayStart(to);
  if (d0 >= d1) return [rollupRows("fleet_index_agent_rollups", from, to, sign)];
  return [
    ...(from < d0 ? [rollupRows("fleet_index_agent_rollups", from, d0, sign)] : []),
    rollupRows("fleet_index_agent_rollups_daily", d0, d1, sign),
    ...(d1 < to ? [rollupRows("fleet_index_agent_rollups", d1, to, sign)] : []),
  ];
}

/** The rows over [x, y) added, or over [y, x) subtracted, as a step from one bound to the other. */
function step(x: number, y: number): SQL[] {
  return x < y ? rowsBetween(x, y, 1) : x > y ? rowsBetween(y, x, -1) : [];
}

/**
 * Builds the span [from, at) under the exclusive lock: stepped from the nearest built span, by the rows
 * between both bounds' moves (S(f, a) = S(f', a') + rows [a', a) - rows [f', f)), else from the month
 * rows (unbounded spans) or the day and hour rows of the span. Any bounded span steps to any other:
 * the ranking's span of the hour steps from the hour before's by an hour of hour rows, and the page's
 * (from a day start, src/fleet/window.ts) from the ranking's by less than a day of them.
 */
async function buildCheckpoint(tx: Db, from: number | null, at: number, builtAt: number): Promise<void> {
  const bounded = from !== null;
  const distance = sql`abs(extract(epoch FROM at - ${iso(at)}::timestamptz))${
    from === null ? sql`` : sql` + abs(extract(epoch FROM from_at - ${iso(from)}::timestamptz))`
  }`;
  const built = await queryRows<{ from_ms: string | null; at: Date | string }>(
    tx,
    sql`SELECT CASE WHEN from_at = '-infinity'::timestamptz THEN NULL ELSE (extract(epoch FROM from_at) * 1000)::bigint END AS from_ms, at
          FROM fleet_index_checkpoints WHERE from_at ${sql.raw(bounded ? ">" : "=")} '-infinity'::timestamptz
         ORDER BY ${distance}, at, from_at LIMIT 1`,
  );
  const near = built[0] === undefined ? null : { from: built[0].from_ms === null ? null : Number(built[0].from_ms), at: new Date(built[0].at).getTime() };
  if (near !== null && near.at === at && near.from === from) return;
  const stepMs = near === null ? Number.POSITIVE_INFINITY : Math.abs(near.at - at) + (from !== null && near.from !== null ? Math.abs(near.from - from) : 0);
  let parts: SQL[];
  if (near !== null && stepMs <= STEP_MAX_DAYS * DAY_MS) {
    parts = [
      sql`SELECT tenant_id, agent_id, ${SPAN_SUMS} FROM fleet_index_agent_checkpoints
            WHERE from_at = ${fromSql(near.from)} AND at = ${iso(near.at)}::timestamptz`,
      ...step(near.at, at),
      ...(from !== null && near.from !== null ? step(from, near.from) : []),
    ];
  } else if (from === null) {
    const month = monthStartMs(at);
    parts = [
      sql`SELECT tenant_id, agent_id, ${rollupSums(1)} FROM fleet_index_agent_rollups_monthly WHERE bucket < ${iso(month)}::timestamptz`,
      rollupRows("fleet_index_agent_rollups_daily", month, at, 1),
    ];
  } else parts = rowsBetween(from, at, 1);
  await tx.execute(sql`INSERT INTO fleet_index_agent_checkpoints (from_at, at, tenant_id, agent_id, ${SPAN_SUMS})
    SELECT ${fromSql(from)}, ${iso(at)}::timestamptz, tenant_id, agent_id, ${sumsOf("")}
      FROM (${sql.join(parts, sql` UNION ALL `)}) s GROUP BY tenant_id, agent_id HAVING sum(row_count) > 0`);
  await tx.execute(sql`INSERT INTO fleet_index_checkpoints (from_at, at, built_at) VALUES (${fromSql(from)}, ${iso(at)}::timestamptz, ${iso(builtAt)}::timestamptz)`);
}

/** A span as epoch ms (from null: unbounded). */
interface Span {
  from: number | null;
  at: number;
}

/**
 * Makes sure the spans are built (one indexed read when they are, the usual case; the first query of
 * a day builds that day's from the day before's). Spans ending long ago are dropped then.
 */
export async function ensureCheckpoints(db: Db, spans: { from: Date | null; at: Date }[], wallNowMs = Date.now()): Promise<void> {
  const want = new Map<string, Span>();
  for (const s of spans) {
    const span = { from: s.from === null ? null : s.from.getTime(), at: s.at.getTime() };
    want.set(`${span.from}/${span.at}`, span);
  }
  if (want.size === 0) return;
  for (const s of want.values()) {
    if (s.at + CHECKPOINT_GRACE_MS > wallNowMs) throw new Error(`checkpoint ${iso(s.at)} asked for before its grace period ended`);
  }
  const wanted = [...want.values()].sort((a, b) => a.at - b.at || (a.from ?? -1) - (b.from ?? -1));
  const have = await queryRows<{ from_ms: string | null; at_ms: string }>(
    db,
    sql`SELECT CASE WHEN from_at = '-infinity'::timestamptz THEN NULL ELSE (extract(epoch FROM from_at) * 1000)::bigint END AS from_ms,
               (extract(epoch FROM at) * 1000)::bigint AS at_ms
          FROM fleet_index_checkpoints WHERE at = ANY(${`{${wanted.map((s) => iso(s.at)).join(",")}}`}::timestamptz[])`,
  );
  const haveKeys = new Set(have.map((r) => `${r.from_ms === null ? null : Number(r.from_ms)}/${Number(r.at_ms)}`));
  const missing = wanted.filter((s) => !haveKeys.has(`${s.from}/${s.at}`));
  if (missing.length === 0) return;
  await db.transaction(async (tx) => {
    await tx.execute(sql`SELECT pg_advisory_xact_lock(${CHECKPOINT_LOCK_KEY})`);
    for (const s of missing) await buildCheckpoint(tx, s.from, s.at, wallNowMs);
    // Spans ending long ago (none ending where a wanted one does), and spans starting inside a day
    // built long ago (a past hour's ranking), except the ones wanted now.
    const fromList = `{${wanted.map((s) => (s.from === null ? "-infinity" : iso(s.from))).join(",")}}`;
    const atList = `{${wanted.map((s) => iso(s.at)).join(",")}}`;
    await tx.execute(sql`WITH stale AS (
        DELETE FROM fleet_index_checkpoints
         WHERE (at < ${iso(dayStart(wallNowMs) - KEEP_DAYS * DAY_MS)}::timestamptz AND NOT (at = ANY(${atList}::timestamptz[])))
            OR (from_at > '-infinity'::timestamptz AND extract(epoch FROM from_at)::bigint % 86400 <> 0
                AND built_at < ${iso(wallNowMs - HOUR_SPAN_KEEP_MS)}::timestamptz
                AND (from_at, at) NOT IN (SELECT * FROM unnest(${fromList}::timestamptz[], ${atList}::timestamptz[])))
        RETURNING from_at, at)
      DELETE FROM fleet_index_agent_checkpoints c USING stale k WHERE c.from_at = k.from_at AND c.at = k.at`);
    // Fresh statistics for the rows of a new day's spans: planned without them, the ranking estimated a
    // few hundred rows per checkpoint instead of one per agent and went parallel (2-5x slower here). Not
    // for a ranking's span of the hour: its day's statistics hold (~220 ms of a 300-400 ms hourly build
    // at 10k agents was the ANALYZE; the ranking runs serial anyway, src/fleet/index-queries.ts).
    if (missing.some((s) => s.from === null || s.from % DAY_MS === 0)) await tx.execute(sql`ANALYZE fleet_index_agent_checkpoints`);
  });
}
