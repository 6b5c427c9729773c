import { and, type SQL, sql } from "drizzle-orm";
import { type TenantScope, tenantCondition } from "../auth/context.js";
import { type Db, queryRows } from "../db/client.js";
import {
  calls,
  fleetIndexAgentCheckpoints as checkpoints,
  fleetIndexAgentRetiredSessions as retired,
  fleetIndexAgentSessionVersions as versions,
  sessions,
} from "../db/schema/index.js";
import { spanRowsSql } from "../rollups/fleet-checkpoints.js";
import { agentPairKey } from "../rollups/fleet-index.js";
import type { PageSegment } from "./window.js";

/** One page agent's count of sessions or calls started in the window, probe calls apart. */
export interface PageCount {
  n: number;
  probe: number;
}

export interface PagePair {
  tenant_id: string | null;
  agent_id: string;
}

interface CountRow {
  tenant_id: string | null;
  agent_id: string;
  n: string;
  probe: string;
}

interface SpanCountRow {
  tenant_id: string | null;
  agent_id: string;
  /** Sessions in the window outside the span (its edges), always counted. */
  edge: string;
  /** The span's count: cached, or counted now (then `counted` is true). */
  span: string;
  counted: boolean;
  has_row: boolean;
  version: string;
}

const iso = (d: Date) => sql`${d.toISOString()}::timestamptz`;
const pairsTable = (pairs: PagePair[]) =>
  sql`json_to_recordset(${JSON.stringify(pairs.map((p) => ({ tenant_id: p.tenant_id, agent_id: p.agent_id })))}::json) AS p(tenant_id text, agent_id text)`;
/** A page pair's rows of `table` (unaliased inside the subquery: its tenant_id is the table's). */
const ofPair = sql`agent_id = p.agent_id AND tenant_id IS NOT DISTINCT FROM p.tenant_id`;
const toMap = (rows: { tenant_id: string | null; agent_id: string; n: number; probe: number }[]) =>
  new Map<string, PageCount>(rows.map((r) => [agentPairKey(r.tenant_id, r.agent_id), { n: r.n, probe: r.probe }]));

/**
 * Sessions and calls started in the window [from, now], for the page's (tenant, agent) pairs: one
 * count per pair over its agent's index range (index-only: tenant and probe are in the key), so nothing
 * is hashed. Sessions of a window with a running-totals span (src/fleet/window.ts) come from the span
 * row's cached count plus the edges around it (pageSessionCounts): a year of a page's sessions is
 * ~100k index entries (15-22 ms at 10M rows), a cached span one row per agent.
 */
export async function pageCounts(db: Db, scope: TenantScope, pairs: PagePair[], segments: PageSegment[], from: Date | null, now: Date) {
  const span = segments.find((s): s is Extract<PageSegment, { source: "span" }> => s.source === "span");
  const [sess, cls] = await Promise.all([
    span ? pageSessionCounts(db, scope, pairs, span, from, now) : perPair(db, scope, pairs, sessions, sql`count(*) AS n, 0 AS probe`, rangeSql(sql`started_at`, from, now, iso)),
    perPair(
      db,
      scope,
      pairs,
      calls,
      sql`count(*) FILTER (WHERE NOT is_probe) AS n, count(*) FILTER (WHERE is_probe) AS probe`,
      rangeSql(sql`started_at_ms`, from, now, (d) => sql`${d.getTime()}::bigint`),
    ),
  ]);
  return { sessions: toMap(sess), calls: toMap(cls) };
}

/** [from, to] on `col` (from null: unbounded). */
function rangeSql(col: SQL, from: Date | null, to: Date, v: (d: Date) => SQL): SQL | undefined {
  return and(from ? sql`${col} >= ${v(from)}` : undefined, sql`${col} <= ${v(to)}`);
}

/** Each pair's `counts` (n, probe) over the rows of `table` matching `where`. */
async function perPair(db: Db, scope: TenantScope, pairs: PagePair[], table: typeof sessions | typeof calls, counts: SQL, where: SQL | undefined) {
  const rows = await queryRows<CountRow>(
    db,
    sql`SELECT p.tenant_id, p.agent_id, c.n, c.probe FROM ${pairsTable(pairs)} CROSS JOIN LATERAL (
        SELECT ${counts} FROM ${table} WHERE ${and(ofPair, where, tenantCondition(table.tenantId, scope))}) c`,
  );
  return rows.map((r) => ({ tenant_id: r.tenant_id, agent_id: r.agent_id, n: Number(r.n), probe: Number(r.probe) }));
}

/**
 * Sessions in a window whose whole days are the span [span.from, span.to): the window's edges
 * ([from, span.from) and [span.to, now]) counted through the agent index, the span from its row's
 * cached count while that was counted at the agent's current sessions version
 * (src/db/schema/fleet-index-agent-session-versions.ts), else counted here and written back only if
 * the version read with the count (same statement, same snapshot) is still the current one, as the
 * sketch caches do. An agent without a span row is counted every time (it has no sessions there
 * unless its sessions took their agent from another agent's records).
 */
async function pageSessionCounts(db: Db, scope: TenantScope, pairs: PagePair[], span: { from: Date | null; to: Date }, from: Date | null, now: Date) {
  const scoped = tenantCondition(sessions.tenantId, scope);
  const count = (where: SQL | undefined) => sql`(SELECT count(*) FROM ${sessions} WHERE ${and(ofPair, where, scoped)})`;
  const before = from !== null && span.from !== null && from < span.from ? count(sql`started_at >= ${iso(from)} AND started_at < ${iso(span.from)}`) : sql`0`;
  const after = count(sql`started_at >= ${iso(span.to)} AND started_at <= ${iso(now)}`);
  // What is left of the span's sessions plus what retention removed of them (whole days: spans start
  // and end at UTC day starts), so the count outlives the raw rows whether or not it was cached.
  const inSpan = sql`${count(and(span.from ? sql`started_at >= ${iso(span.from)}` : undefined, sql`started_at < ${iso(span.to)}`))} + (SELECT coalesce(sum(sessions), 0) FROM ${retired}
      WHERE ${and(ofPair, span.from ? sql`day >= ${iso(span.from)}` : undefined, sql`day < ${iso(span.to)}`, tenantCondition(retired.tenantId, scope))})`;
  const current = sql`coalesce(v.version, 0)`;
  const cached = sql`c.sessions IS NOT NULL AND c.sessions_version = ${current}`;
  const rows = await queryRows<SpanCountRow>(
    db,
    sql`SELECT p.tenant_id, p.agent_id, ${before} + ${after} AS edge,
          CASE WHEN ${cached} THEN c.sessions ELSE ${inSpan} END AS span, NOT coalesce(${cached}, false) AS counted,
          c.agent_id IS NOT NULL AS has_row, ${current} AS version
        FROM ${pairsTable(pairs)}
        LEFT JOIN ${checkpoints} c ON ${spanRowsSql(span.from, span.to, "c")} AND c.agent_id = p.agent_id AND c.tenant_id IS NOT DISTINCT FROM p.tenant_id
        LEFT JOIN ${versions} v ON v.agent_id = p.agent_id AND v.tenant_id IS NOT DISTINCT FROM p.tenant_id`,
  );
  const fresh = rows.filter((r) => r.counted && r.has_row).map((r) => ({ tenant_id: r.tenant_id, agent_id: r.agent_id, n: r.span, version: r.version }));
  if (fresh.length > 0) {
    // SKIP LOCKED: a cache write never waits for a row another statement holds (the same page's sketch
    // cache write, a fold), so it cannot close a deadlock cycle; a skipped row is counted again next time.
    await db.execute(sql`UPDATE ${checkpoints} c SET sessions = t.n, sessions_version = t.version
        FROM (SELECT k.ctid AS row_id, x.n, x.version
                FROM json_to_recordset(${JSON.stringify(fresh)}::json) AS x(tenant_id text, agent_id text, n bigint, version bigint)
                JOIN ${checkpoints} k ON ${spanRowsSql(span.from, span.to, "k")} AND k.tenant_id IS NOT DISTINCT FROM x.tenant_id AND k.agent_id = x.agent_id
               WHERE coalesce((SELECT v.version FROM ${versions} v WHERE v.agent_id = x.agent_id AND v.tenant_id IS NOT DISTINCT FROM x.tenant_id), 0) = x.version
                 FOR UPDATE OF k SKIP LOCKED) t
       WHERE c.ctid = t.row_id`);
  }
  return rows.map((r) => ({ tenant_id: r.tenant_id, agent_id: r.agent_id, n: Number(r.edge) + Number(r.span), probe: 0 }));
}
