import { and, type SQL, sql } from "drizzle-orm";
import type { AnyPgColumn } from "drizzle-orm/pg-core";
import { z } from "zod";
import { type TenantScope, tenantCondition } from "../auth/context.js";
import { type Db, queryRows } from "../db/client.js";
import { agentPresence, fleetIndexAgentCheckpoints as checkpoints, fleetIndexAgentRollups, fleetIndexAgentRollupsDaily, fleetIndexAgentRollupsMonthly, requests, turns } from "../db/schema/index.js";
import { RANK_EXPR } from "../db/schema/fleet-index-agent-rollups.js";
import { moneyNumber } from "../money.js";
import { costsQuery } from "../reports/query.js";
import type { Period } from "../reports/window.js";
import { type AgentAcc, AgentRollupBatch, emptyAgentAcc, FLEET_MODALITIES, type FleetModality, agentPairKey, mergeAgentAcc, textArray } from "../rollups/fleet-index.js";
import { mergeStoredSketch } from "../rollups/sketch-json.js";
import { summarize } from "../stats/summary.js";
import { ROSTER_AGEING_SECONDS } from "./presence.js";
import { ensureCheckpoints, spanRowsSql } from "../rollups/fleet-checkpoints.js";
import { closedMonthSketches, HAS_SKETCH, type SketchRow } from "./month-sketches.js";
import { type PageCount, pageCounts } from "./page-counts.js";
import { checkpointSpans, type RankTerm, rankTerms } from "./rank-plan.js";
import { rankSources } from "./rank-sources.js";
import { spanSketches } from "./span-sketches.js";
import { type FleetSegment as Segment, type PageSegment, pageSpans, pageWindowSegments } from "./window.js";

/** GET /api/agents page sizes. */
export const FLEET_INDEX_LIMIT_DEFAULT = 100;
export const FLEET_INDEX_LIMIT_MAX = 1000;
export const FLEET_INDEX_SORTS = ["cost", "requests", "agent_id"] as const;

const intParam = (min: number, max: number, dflt: number) =>
  z
    .string()
    .optional()
    .transform((v, ctx) => {
      if (v === undefined || v === "") return dflt;
      const n = /^\d+$/.test(v.trim()) ? Number(v.trim()) : Number.NaN;
      if (!Number.isInteger(n) || n < min || n > max) {
        ctx.addIssue({ code: "custom", message: `must be an integer from ${min} to ${max}` });
        return z.NEVER;
      }
      return n;
    });

/** The query of GET /api/agents: `period` is /api/costs's own (same values, default, error). */
export const fleetIndexQuery = z.object({
  period: costsQuery.shape.period,
  limit: intParam(1, FLEET_INDEX_LIMIT_MAX, FLEET_INDEX_LIMIT_DEFAULT),
  offset: intParam(0, 10_000_000, 0),
  sort: z.enum(FLEET_INDEX_SORTS).default("cost"),
});

export interface FleetIndexArgs extends TenantScope {
  period: Period;
  limit: number;
  offset: number;
  sort: (typeof FLEET_INDEX_SORTS)[number];
  now?: Date;
}

const ROLLUP_TABLES = {
  hour: fleetIndexAgentRollups,
  day: fleetIndexAgentRollupsDaily,
  month: fleetIndexAgentRollupsMonthly,
} as const;

function range(time: AnyPgColumn | SQL, seg: Segment, asMs = false): SQL | undefined {
  const v = (d: Date) => (asMs ? sql`${d.getTime()}::bigint` : sql`${d.toISOString()}::timestamptz`);
  return and(seg.from ? sql`${time} >= ${v(seg.from)}` : undefined, seg.toInclusive ? sql`${time} <= ${v(seg.to)}` : sql`${time} < ${v(seg.to)}`);
}

/** The same turn-probe rule as the rollups (src/rollups/fleet-index.ts). */
const TURN_PROBE = sql.raw(`(EXISTS (SELECT 1 FROM calls c WHERE turns.room_name IS NOT NULL AND c.room_name = turns.room_name AND c.is_probe
  AND (c.tenant_id IS NULL OR c.tenant_id = turns.tenant_id)))`);

interface TotalsRow {
  tenant_id: string | null;
  agent_id: string | null;
  requests: string;
  probe_requests: string;
  errors: string;
  cost: string;
  rated: string;
  turns: string;
  probe_turns: string;
  agent_name: string | null;
  host: string | null;
  version: string | null;
  region: string | null;
  last_seen_at: Date | string | null;
}

type SortKey = FleetIndexArgs["sort"];

/**
 * What each source contributes to the ranking: the sort column only (`agent_id` sorts on the key),
 * as float8, whose sum() keeps its state by value: a numeric sum allocates a digit accumulator per
 * agent and was most of the ranking (10k agents: ~25-38 ms of numeric sums against ~13-17 ms in
 * float8, psql \timing at 10M rows). Cost is ranked in units of 1e-10 USD (RANK_EXPR.costUnits, also
 * stored in the rank indexes), so every term is a whole number and the sums are exact below 2^53 units
 * (≈ $900k per agent and window); above that two totals equal to the tenth decimal may rank either way.
 * A source that adds nothing gives NULL (sum() skips it). The page shows the exact numeric totals
 * (statement 2).
 */
const COST_UNITS = RANK_EXPR.costUnits;
const RANK_VALUE: Record<SortKey, { raw: string; rollup: string; none: string }> = {
  cost: { raw: COST_UNITS, rollup: COST_UNITS, none: "NULL::float8" },
  requests: { raw: "1::float8", rollup: "requests::float8", none: "NULL::float8" },
  agent_id: { raw: "NULL::float8", rollup: "NULL::float8", none: "NULL::float8" },
};

/**
 * One UNION ALL of the page's agents' figures over the window: the running-totals span for its whole
 * days, rollup buckets for whole hours/days, raw request rows and turns for the partial edge hours,
 * presence rows (so an agent only heard by heartbeat is listed too). Every source is confined by
 * tenantCondition, the one tenant-scoping path, and read through its agent index.
 */
function totalsUnion(segments: PageSegment[], scope: TenantScope, ids: string[]): SQL {
  const only = (col: AnyPgColumn | SQL) => sql`${col} = ANY(${textArray(ids)})`;
  const nul = sql.raw("NULL::text AS agent_name, NULL::text AS host, NULL::text AS version, NULL::text AS region, NULL::timestamptz AS last_seen_at");
  const sums = sql.raw("requests, probe_requests, errors, cost_usd AS cost, rated_price_usd AS rated, turns, probe_turns");
  const parts: SQL[] = [];
  for (const seg of segments) {
    if (seg.source === "span") {
      parts.push(sql`SELECT tenant_id, agent_id, ${sums}, ${nul} FROM ${checkpoints}
        WHERE ${and(spanRowsSql(seg.from, seg.to), only(checkpoints.agentId), tenantCondition(checkpoints.tenantId, scope))}`);
    } else if (seg.source === "raw") {
      parts.push(sql`SELECT tenant_id, agent_id, 1::bigint AS requests, is_probe::int::bigint AS probe_requests,
          (status = 'error' AND NOT is_probe)::int::bigint AS errors, coalesce(cost_usd, 0) AS cost, coalesce(rated_price_usd, 0) AS rated,
          0::bigint AS turns, 0::bigint AS probe_turns, ${nul}
        FROM ${requests} WHERE ${and(sql`agent_id IS NOT NULL`, only(sql`agent_id`), range(requests.ts, seg), tenantCondition(requests.tenantId, scope))}`);
      parts.push(sql`SELECT turns.tenant_id, turns.agent_id, 0::bigint, 0::bigint, 0::bigint, 0::numeric, 0::numeric,
          (NOT ${TURN_PROBE})::int::bigint, ${TURN_PROBE}::int::bigint, ${nul}
        FROM ${turns} WHERE ${and(sql`turns.agent_id IS NOT NULL`, only(sql`turns.agent_id`), range(turns.callerSpeakStartMs, seg, true), tenantCondition(turns.tenantId, scope))}`);
    } else {
      const t = ROLLUP_TABLES[seg.source];
      parts.push(sql`SELECT tenant_id, agent_id, ${sums}, ${nul} FROM ${t} WHERE ${and(only(t.agentId), range(t.bucket, seg), tenantCondition(t.tenantId, scope))}`);
    }
  }
  parts.push(sql`SELECT tenant_id, agent_id, 0::bigint, 0::bigint, 0::bigint, 0::numeric, 0::numeric, 0::bigint, 0::bigint,
      agent_name, host, version, region, last_seen_at ${presenceFrom(scope, only(agentPresence.agentId))}`);
  return sql.join(parts, sql` UNION ALL `);
}

function presenceFrom(scope: TenantScope, extra?: SQL): SQL {
  const where = and(extra, tenantCondition(agentPresence.tenantId, scope));
  return sql`FROM ${agentPresence}${where ? sql` WHERE ${where}` : sql``}`;
}

/**
 * Every agent of the window with its sort value and last heartbeat: the ranking's sources (running
 * totals, a day of rows and the edges: src/fleet/rank-plan.ts) and the presence rows (one per tenant
 * and agent; last_seen_at is never null) in one aggregate per agent. An agent is listed when its rows
 * add up to some (n > 0) or it has a heartbeat; one heard only by heartbeat, or whose signed terms
 * cancel, ranks at 0, and so does one whose only rows are raw turns (v NULL: it would rank first, DESC
 * putting NULLs first). One hash aggregate over the 10k presence rows too costs less than hashing them
 * again for a FULL JOIN with the summed sources (period=all at 10M rows: 11 against 15 ms, psql).
 */
function rankedAgents(terms: RankTerm[], scope: TenantScope, sort: SortKey): SQL {
  return sql`SELECT tenant_id, agent_id, CASE WHEN sum(n) > 0 THEN coalesce(sum(v), 0) ELSE 0 END AS v, max(last_seen_at) AS last_seen_at
    FROM (SELECT tenant_id, agent_id, v, n, NULL::timestamptz AS last_seen_at FROM (${rankSources(terms, scope, RANK_VALUE[sort])}) s
          UNION ALL SELECT tenant_id, agent_id, NULL::float8, NULL::float8, last_seen_at ${presenceFrom(scope)}) r
    GROUP BY tenant_id, agent_id HAVING sum(n) > 0 OR max(last_seen_at) IS NOT NULL`;
}

/** The page's agents' totals over the window (one row per agent). */
function pageTotals(db: Db, segments: PageSegment[], scope: TenantScope, agentIds: string[]) {
  return queryRows<TotalsRow & { agent_id: string }>(
    db,
    sql`SELECT tenant_id, agent_id, sum(requests)::text AS requests, sum(probe_requests)::text AS probe_requests, sum(errors)::text AS errors,
      sum(cost)::text AS cost, sum(rated)::text AS rated, sum(turns)::text AS turns, sum(probe_turns)::text AS probe_turns,
      max(agent_name) AS agent_name, max(host) AS host, max(version) AS version, max(region) AS region, max(last_seen_at) AS last_seen_at
    FROM (${totalsUnion(segments, scope, agentIds)}) r GROUP BY tenant_id, agent_id`,
  );
}

/** The page's agents' sketches: the whole days' span cache, month caches and rollup sketches merged, edge-hour raw samples added (probe traffic left out). */
async function pageSketches(db: Db, segments: PageSegment[], scope: TenantScope, agentIds: string[]) {
  const ids = textArray(agentIds);
  const rollupParts: SQL[] = [];
  const rawReq: SQL[] = [];
  const rawTurns: SQL[] = [];
  const monthSegs: Segment[] = [];
  const spanSegs: PageSegment[] = [];
  for (const seg of segments) {
    if (seg.source === "span") {
      spanSegs.push(seg);
    } else if (seg.source === "raw") {
      rawReq.push(sql`SELECT tenant_id, agent_id, modality, ttfb_ms FROM ${requests}
        WHERE ${and(sql`agent_id = ANY(${ids})`, sql`NOT is_probe`, sql`ttfb_ms IS NOT NULL`, range(requests.ts, seg), tenantCondition(requests.tenantId, scope))}`);
      rawTurns.push(sql`SELECT turns.tenant_id, turns.agent_id, turns.caller_speak_start_ms AS start_ms, turns.response_speed_ms, ${TURN_PROBE} AS is_probe
        FROM ${turns} WHERE ${and(sql`turns.agent_id = ANY(${ids})`, range(turns.callerSpeakStartMs, seg, true), tenantCondition(turns.tenantId, scope))}`);
    } else if (seg.source === "month") {
      monthSegs.push(seg);
    } else {
      const t = ROLLUP_TABLES[seg.source];
      rollupParts.push(sql`SELECT tenant_id, agent_id, stt_ttfb_hist, llm_ttfb_hist, tts_ttfb_hist, response_hist FROM ${t}
        WHERE ${and(sql`agent_id = ANY(${ids})`, range(t.bucket, seg), tenantCondition(t.tenantId, scope))}
          AND ${HAS_SKETCH}`);
    }
  }
  const [rolled, months, raw, rawT] = await Promise.all([
    rollupParts.length === 0 ? [] : queryRows<SketchRow>(db, sql.join(rollupParts, sql` UNION ALL `)),
    Promise.all([
      ...monthSegs.map((seg) => closedMonthSketches(db, scope, agentIds, seg.from, seg.to)),
      ...spanSegs.map((seg) => spanSketches(db, scope, agentIds, seg.from, seg.to)),
    ]),
    rawReq.length === 0
      ? []
      : queryRows<{ tenant_id: string | null; agent_id: string; modality: string; ttfb_ms: number }>(db, sql.join(rawReq, sql` UNION ALL `)),
    rawTurns.length === 0
      ? []
      : queryRows<{ tenant_id: string | null; agent_id: string; start_ms: string; response_speed_ms: number | null; is_probe: boolean }>(
          db,
          sql.join(rawTurns, sql` UNION ALL `),
        ),
  ]);
  // One accumulator per agent (the grain is irrelevant: everything lands in one bucket).
  const batch = new AgentRollupBatch(() => 0);
  const out = new Map<string, AgentAcc>();
  const accOf = (tenantId: string | null, agentId: string) => {
    const k = agentPairKey(tenantId, agentId);
    let a = out.get(k);
    if (!a) {
      a = emptyAgentAcc(new Date(0), tenantId, agentId);
      out.set(k, a);
    }
    return a;
  };
  // Span and month caches first: their samples are stored sorted, so the few the rollup rows add
  // after them are merged in rather than the whole sketch sorted again (summary.ts ascending).
  for (const r of [...months.flat(), ...rolled]) {
    const a = accOf(r.tenant_id, r.agent_id);
    mergeStoredSketch(a.ttfb.stt, r.stt_ttfb_hist);
    mergeStoredSketch(a.ttfb.llm, r.llm_ttfb_hist);
    mergeStoredSketch(a.ttfb.tts, r.tts_ttfb_hist);
    mergeStoredSketch(a.response, r.response_hist);
  }
  for (const r of raw) {
    batch.addRequest({
      id: "",
      ts: new Date(0),
      tenant_id: r.tenant_id,
      agent_id: r.agent_id,
      modality: r.modality,
      model_id: "",
      provider: "",
      ttfb_ms: Number(r.ttfb_ms),
    });
  }
  for (const t of rawT) {
    batch.addTurn({
      startMs: 0,
      tenantId: t.tenant_id,
      agentId: t.agent_id,
      responseSpeedMs: t.response_speed_ms === null ? null : Number(t.response_speed_ms),
      isProbe: t.is_probe,
    });
  }
  for (const a of batch.byKey.values()) mergeAgentAcc(accOf(a.tenantId, a.agentId), a);
  return out;
}

const p95 = (s: Parameters<typeof summarize>[0]) => summarize(s)?.p95 ?? null;
const iso = (d: Date | string | null) => (d === null ? null : new Date(d).toISOString());

/**
 * The page's keys ranked on the sort column alone, and the roster's counts: one row even when the page
 * is empty (offset past the end), so the counts still answer. Planned serial on purpose (the
 * voxgate_serial_plan() call, migrations/0020): Postgres plans this 10k-group aggregate parallel when it
 * underestimates the groups, and on a small machine the workers' start-up alone cost more than the
 * whole statement (today at 10M rows: 147 ms with 2 workers, ~30 ms without; docs/PERFORMANCE.md). The
 * call replaces a transaction around SET LOCAL max_parallel_workers_per_gather = 0 (three more round trips).
 */
export function rankPageSql(terms: RankTerm[], args: FleetIndexArgs, now: Date): SQL {
  const order = args.sort === "agent_id" ? "" : "v DESC, ";
  return sql`WITH a AS (${rankedAgents(terms, args, args.sort)})
      SELECT p.tenant_id, p.agent_id, c.total, c.online
      FROM (SELECT count(*) AS total,
              count(*) FILTER (WHERE last_seen_at > ${now.toISOString()}::timestamptz - make_interval(secs => ${ROSTER_AGEING_SECONDS})) AS online
            FROM a) c
      LEFT JOIN LATERAL (
        SELECT tenant_id, agent_id FROM a ORDER BY ${sql.raw(order)}agent_id, tenant_id NULLS FIRST
        LIMIT ${args.limit} OFFSET ${args.offset}) p ON true
      WHERE voxgate_serial_plan()`;
}

function rankPage(db: Db, terms: RankTerm[], args: FleetIndexArgs, now: Date) {
  return queryRows<{ tenant_id: string | null; agent_id: string | null; total: string; online: string }>(db, rankPageSql(terms, args, now));
}

/**
 * GET /api/agents: the fleet index. One entry per agent seen (request records, attributed turns or a
 * heartbeat), one page of them sorted by `sort`, with the window's figures from the per-agent rollups
 * (edge hours from raw rows, as every report does). Probe traffic is counted apart and kept out of
 * every percentile, of errors and of error_rate.
 */
export async function fleetIndex(db: Db, args: FleetIndexArgs) {
  const now = args.now ?? new Date();

  const wallNowMs = Date.now();
  const terms = rankTerms(args.period, now, wallNowMs);
  const segments = pageWindowSegments(args.period, now, wallNowMs);
  const from = segments[0]?.from ?? null;
  await ensureCheckpoints(db, [...checkpointSpans(terms), ...pageSpans(segments)], wallNowMs);
  // 1. Rank (rankPage, planned serial).
  const ranked = await rankPage(db, terms, args, now);
  const head = ranked[0];
  const pageKeys = ranked.filter((r): r is typeof r & { agent_id: string } => r.agent_id !== null);
  const agentIds = [...new Set(pageKeys.map((r) => r.agent_id))];
  // 2. The page's agents' totals, sketches and counts, at once (each read through its agent index).
  const [totals, sketches, counts] =
    agentIds.length === 0
      ? [[], new Map<string, AgentAcc>(), { sessions: new Map<string, PageCount>(), calls: new Map<string, PageCount>() }]
      : await Promise.all([
          pageTotals(db, segments, args, agentIds),
          pageSketches(db, segments, args, agentIds),
          pageCounts(db, args, pageKeys, segments, from, now),
        ]);
  const byKey = new Map(totals.map((r) => [agentPairKey(r.tenant_id, r.agent_id), r]));
  const page = pageKeys.flatMap((k) => byKey.get(agentPairKey(k.tenant_id, k.agent_id)) ?? []);
  const agents = page.map((r) => {
    const k = agentPairKey(r.tenant_id, r.agent_id);
    const s = sketches.get(k);
    const requestsN = Number(r.requests);
    const probeRequests = Number(r.probe_requests);
    const errors = Number(r.errors);
    const measured = requestsN - probeRequests;
    const lastSeen = r.last_seen_at === null ? null : new Date(r.last_seen_at);
    const sc = counts.sessions.get(k);
    const cc = counts.calls.get(k);
    const ttfb = Object.fromEntries(FLEET_MODALITIES.map((m) => [m, s ? p95(s.ttfb[m]) : null])) as Record<FleetModality, number | null>;
    return {
      agent_id: r.agent_id,
      tenant_id: r.tenant_id,
      agent_name: r.agent_name,
      host: r.host,
      version: r.version,
      region: r.region,
      online: lastSeen !== null && now.getTime() - lastSeen.getTime() < ROSTER_AGEING_SECONDS * 1000,
      last_heartbeat_at: iso(r.last_seen_at),
      sessions: sc?.n ?? 0,
      calls: cc?.n ?? 0,
      requests: requestsN,
      errors,
      error_rate: measured > 0 ? Math.round((errors / measured) * 10_000) / 10_000 : null,
      cost_usd: moneyNumber(r.cost),
      rated_price_usd: moneyNumber(r.rated),
      turns: Number(r.turns),
      p95_response_speed_ms: s ? p95(s.response) : null,
      p95_ttfb_ms: ttfb,
      probe: { requests: probeRequests, turns: Number(r.probe_turns), calls: cc?.probe ?? 0 },
    };
  });
  return {
    period: args.period,
    sort: args.sort,
    limit: args.limit,
    offset: args.offset,
    total_agents: Number(head?.total ?? 0),
    online: Number(head?.online ?? 0),
    ageing_seconds: ROSTER_AGEING_SECONDS,
    agents,
  };
}

export type FleetIndex = Awaited<ReturnType<typeof fleetIndex>>;
