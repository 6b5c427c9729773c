/**
 * bench:agents — p50/p95 of GET /api/agents (the fleet index, docs/api/fleet.md) over HTTP, for the default
 * query, every period and every sort, against baselines measured in the same run on the same data:
 * GET /api/costs for the same period (the rollup-served report the index mirrors) and the naive
 * answer, a raw-SQL aggregate over `requests` (per-agent sums, probe counts, nearest-rank p95 per
 * modality, top page by cost). Target: p95 < 50 ms with 10M request rows and 10k agents. The index's
 * queries are measured first, round-robin (one request of each per round), the baselines after them,
 * each with this process's CPU per request (the server and its HTTP client both run here): on 2 cores
 * Node's share competes with Postgres's, so it is part of every figure.
 *
 * Data: bench/generate.ts's bulk path (a year of request rows, INSERT … SELECT, rollups rebuilt by
 * rebuildRollups, which rebuilds the per-agent rollups in SQL the way ingest folds them), every row owned by
 * one of N agents (tenant fixed per agent, 5 % probe, 2 % errors) in 10-minute sessions; plus the
 * sessions, one turn per llm request (attributed to the session's agent), a call for one session in ten
 * (5 % of them probe) and a presence row per agent (80 % online).
 *   npm run bench:agents -- [--rows 1000000] [--agents 10000] [--iterations 40] [--keep] [--url <kept database>]
 * --keep leaves the seeded database in place (its URL is printed) for EXPLAIN (ANALYZE, BUFFERS).
 * --url measures a kept database again instead of seeding one (migrated first, presence rows rewritten
 * so they are online now; never dropped): before/after a change on the same data. A new rollup grain
 * must be filled first (`npm run bench:agents:explain -- <url> --rebuild`).
 */
import { loadavg } from "node:os";
import type { AddressInfo } from "node:net";
import { serve } from "@hono/node-server";
import { type SQL, sql } from "drizzle-orm";
import { parseEnv } from "../src/config/env.js";
import { parseConfigText } from "../src/config/load.js";
import { type Db, openDatabase } from "../src/db/client.js";
import { runMigrations } from "../src/db/migrate.js";
import type { FleetIndex } from "../src/fleet/index-queries.js";
import { createApp } from "../src/http/app.js";
import { silentLogger } from "../src/logging.js";
import { PERIOD_SECONDS, type Period } from "../src/reports/window.js";
import { checkpointSpans, rankTerms } from "../src/fleet/rank-plan.js";
import { ensureCheckpoints } from "../src/rollups/fleet-checkpoints.js";
import { createServices } from "../src/compose.js";
import { seedFleet } from "./agents-seed.js";
import { createBenchDatabase, parseRowsArg, seedBenchData } from "./generate.js";
import { fmt, percentile, timeIt } from "./support.js";

const TARGET_P95_MS = 50;
const arg = (name: string, dflt: number) => {
  const i = process.argv.indexOf(name);
  const v = i >= 0 ? Number(process.argv[i + 1]) : dflt;
  if (!Number.isInteger(v) || v <= 0) throw new Error(`${name} wants a positive integer`);
  return v;
};
const ITERATIONS = arg("--iterations", 40);
const AGENTS = arg("--agents", 10_000);
const BASELINE_ITERATIONS = 5;
/** Unmeasured rounds of every /api/agents query first: JIT, plans and caches as a running server has them. */
const WARMUP_ROUNDS = 3;
const BENCH_KEY = "bench-operator-key-0123456789";
const headers = { authorization: `Bearer ${BENCH_KEY}` };

const load = () => loadavg().map((l) => l.toFixed(2)).join(" ");


/** A presence row per agent, 80 % heard within the last 40 s (written just before measuring, so they are online). */
async function seedPresence(db: Db): Promise<void> {
  await db.execute(sql`INSERT INTO agent_presence (tenant_id, agent_id, agent_name, status, active_sessions, version, region, host, last_seen_at)
    SELECT (ARRAY['acme','globex'])[1 + a % 2], 'agent-' || lpad(a::text, 5, '0'), 'bot-' || a, CASE WHEN a % 3 = 0 THEN 'busy' ELSE 'idle' END, a % 4,
           '1.' || (a % 7), (ARRAY['eu-west','us-east','ap-south'])[1 + a % 3], 'host-' || (a / 8),
           now() - make_interval(secs => CASE WHEN a % 5 = 0 THEN 3600 + a ELSE a % 40 END)
      FROM generate_series(0, ${AGENTS - 1}) a`);
}

/** The naive answer: the first page by cost, aggregated from raw request rows of the window. */
function rawIndexSql(period: Period): SQL {
  const since = period === "all" ? sql`` : sql`AND ts >= now() - ${`${PERIOD_SECONDS[period]} seconds`}::interval`;
  const p95 = (m: string) => sql`percentile_disc(0.95) WITHIN GROUP (ORDER BY ttfb_ms) FILTER (WHERE NOT is_probe AND modality = ${m})`;
  return sql`SELECT tenant_id, agent_id, sum(coalesce(cost_usd, 0)) AS cost, sum(coalesce(rated_price_usd, 0)) AS rated, count(*) AS requests,
      count(*) FILTER (WHERE is_probe) AS probe, count(*) FILTER (WHERE status = 'error' AND NOT is_probe) AS errors,
      ${p95("stt")} AS stt, ${p95("llm")} AS llm, ${p95("tts")} AS tts
    FROM requests WHERE agent_id IS NOT NULL AND ts <= now() ${since}
    GROUP BY tenant_id, agent_id ORDER BY cost DESC, agent_id, tenant_id NULLS FIRST LIMIT 100`;
}

/**
 * What the ranking's running totals (src/rollups/fleet-checkpoints.ts) cost to build, paid by the
 * first query that needs them: on a database that has none (from the month and day rows), and on a
 * new day (today's spans stepped from yesterday's, the steady state). The timed queries find them built.
 */
async function measureCheckpointBuilds(db: Db, fetchJson: (path: string) => Promise<unknown>): Promise<void> {
  const dropFrom = async (at: string) => {
    await db.execute(sql`DELETE FROM fleet_index_checkpoints WHERE at >= ${at}::timestamptz`);
    await db.execute(sql`DELETE FROM fleet_index_agent_checkpoints WHERE at >= ${at}::timestamptz`);
  };
  const timed = async (periods: Period[]) => {
    const out: string[] = [];
    for (const p of periods) {
      const t0 = performance.now();
      await fetchJson(`/api/agents?period=${p}`);
      out.push(`${p} ${fmt(performance.now() - t0)}`);
    }
    return out.join(", ");
  };
  const periods: Period[] = ["today", "month", "week", "all"];
  await dropFrom("-infinity");
  const cold = await timed(periods);
  // Yesterday's spans (what yesterday's queries built), then today's dropped: the first query of a day.
  const now = Date.now();
  const spansAt = (ms: number) => periods.flatMap((p) => checkpointSpans(rankTerms(p, new Date(ms), now)));
  await ensureCheckpoints(db, spansAt(now - 86_400_000));
  const today = new Date(Math.floor(now / 86_400_000) * 86_400_000);
  await dropFrom(today.toISOString());
  const newDay = await timed(periods);
  const n = (await db.execute(sql`SELECT count(*) AS n FROM fleet_index_agent_checkpoints WHERE at = ${today.toISOString()}::timestamptz`)) as unknown as {
    rows: { n: string }[];
  };
  // The hour before's ranking spans (they start at the window's first hour), then this hour's dropped:
  // the first query of an hour, stepped by an hour of hour rows.
  await ensureCheckpoints(db, spansAt(now - 3_600_000));
  for (const s of spansAt(now).filter((x) => x.from !== null && x.from.getTime() % 86_400_000 !== 0)) {
    await db.execute(sql`DELETE FROM fleet_index_checkpoints WHERE from_at = ${s.from?.toISOString()}::timestamptz AND at = ${s.at.toISOString()}::timestamptz`);
    await db.execute(sql`DELETE FROM fleet_index_agent_checkpoints WHERE from_at = ${s.from?.toISOString()}::timestamptz AND at = ${s.at.toISOString()}::timestamptz`);
  }
  const newHour = await timed(periods.filter((p) => p !== "all"));
  // What autovacuum does within a minute of a build (migration 0019: after 5k changed rows; this
  // machine's Postgres runs with autovacuum off): the new spans' rows all-visible, read from the index alone.
  await db.execute(sql`VACUUM fleet_index_agent_checkpoints`);
  console.log(
    `  running totals: first queries with none built (ms): ${cold}; a new day's first queries (stepped from yesterday's): ${newDay} ` +
      `(${fmt(Number(n.rows[0]?.n ?? 0), 0)} agent rows in today's spans); a new hour's (stepped from the hour before's): ${newHour}  load ${load()}`,
  );
}

interface Row {
  label: string;
  p50: number;
  p95: number;
  load: string;
  /** This process's CPU per request (server and its HTTP client: both run here), ms. */
  cpuMs?: number;
}

/** A database kept by an earlier --keep run, migrated to this code's schema; its drop() leaves it. */
async function reuseDatabase(url: string) {
  const database = await openDatabase({ url });
  await runMigrations(database);
  return { url, database, drop: () => database.close() };
}

async function measure(rows: number) {
  const reuse = process.argv[process.argv.indexOf("--url") + 1];
  const kept = process.argv.includes("--url") && reuse !== undefined;
  console.log(`\n== ${kept ? `kept database ${reuse}` : `${fmt(rows, 0)} request rows over a year`}, ${fmt(AGENTS, 0)} agents ==`);
  const bench = kept ? await reuseDatabase(reuse) : await createBenchDatabase();
  try {
    const db = bench.database.db;
    if (kept) await db.execute(sql`DELETE FROM agent_presence`);
    else {
      const t0 = Date.now();
      // Known before the hours of a 10M-row seed and measurement: the kept database can be found early.
      if (process.argv.includes("--keep")) console.log(`  seeding kept database: ${bench.url}`);
      await seedBenchData(bench, rows, new Date(), true, { agents: AGENTS, beforeRollups: seedFleet });
      console.log(`  generated in ${fmt((Date.now() - t0) / 1000)} s`);
    }
    await seedPresence(db);
    await db.execute(sql`ANALYZE agent_presence`);
    // The rebuild folds each day into its month's row (an update per day): vacuum as autovacuum would
    // before serving, so the month table is measured without a year of dead row versions.
    await db.execute(sql`VACUUM (ANALYZE) fleet_index_agent_rollups, fleet_index_agent_rollups_daily, fleet_index_agent_rollups_monthly`);
    const counts = (await db.execute(sql`SELECT
        (SELECT count(*) FROM requests) AS requests, (SELECT count(*) FROM turns) AS turns, (SELECT count(*) FROM sessions) AS sessions,
        (SELECT count(*) FROM calls) AS calls, (SELECT count(*) FROM fleet_index_agent_rollups) AS hourly,
        (SELECT count(*) FROM fleet_index_agent_rollups_daily) AS daily,
        (SELECT count(*) FROM fleet_index_agent_rollups_daily WHERE bucket >= now() - interval '30 days') AS daily_month,
        (SELECT count(*) FROM fleet_index_agent_rollups_monthly) AS monthly`)) as unknown as {
      rows: Record<string, string>[];
    };
    const c = counts.rows[0] ?? {};
    console.log(
      `  rows: requests ${fmt(Number(c.requests), 0)}, turns ${fmt(Number(c.turns), 0)}, sessions ${fmt(Number(c.sessions), 0)}, calls ${fmt(Number(c.calls), 0)}; ` +
        `per-agent rollup rows: hourly ${fmt(Number(c.hourly), 0)}, daily ${fmt(Number(c.daily), 0)} (last 30 days ${fmt(Number(c.daily_month), 0)}), monthly ${fmt(Number(c.monthly), 0)}`,
    );

    const config = parseConfigText(`auth:\n  api_keys:\n    - ${BENCH_KEY}\n`, "bench.yaml", {});
    const services = createServices({ database: bench.database, config, env: parseEnv({}), log: silentLogger });
    const app = createApp(services);
    const server = await new Promise<ReturnType<typeof serve>>((resolve) => {
      const s = serve({ fetch: app.fetch, port: 0, hostname: "127.0.0.1" }, () => resolve(s));
    });
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const fetchJson = async <T>(path: string): Promise<T> => {
      const res = await fetch(base + path, { headers });
      if (res.status !== 200) throw new Error(`${path} answered ${res.status}: ${await res.text()}`);
      return (await res.json()) as T;
    };
    /**
     * Every /api/agents query, measured in rounds of one request each (round-robin), after WARMUP_ROUNDS
     * unmeasured rounds: whatever the machine does meanwhile (another tenant of the VM, a checkpoint)
     * lands on all queries alike instead of on whichever one was running, and no query is measured
     * right after the raw-SQL baselines (a minute of scanning 10M rows that evicts the caches a running
     * server keeps warm): those run after.
     */
    const httpRounds = async (paths: string[]): Promise<Map<string, Row>> => {
      const times = new Map<string, number[]>(paths.map((p) => [p, []]));
      const cpu = new Map<string, number>(paths.map((p) => [p, 0]));
      for (let round = 0; round < WARMUP_ROUNDS + ITERATIONS; round++) {
        for (const path of paths) {
          const t0 = performance.now();
          const c0 = process.cpuUsage();
          await fetchJson(path);
          const c = process.cpuUsage(c0);
          if (round >= WARMUP_ROUNDS) {
            times.get(path)?.push(performance.now() - t0);
            cpu.set(path, (cpu.get(path) ?? 0) + (c.user + c.system) / 1000);
          }
        }
      }
      const at = load();
      return new Map(
        paths.map((p) => {
          const xs = (times.get(p) ?? []).sort((a, b) => a - b);
          return [p, { label: `GET ${p}`, p50: percentile(xs, 0.5), p95: percentile(xs, 0.95), load: at, cpuMs: (cpu.get(p) ?? 0) / ITERATIONS }];
        }),
      );
    };
    const http = async (path: string): Promise<Row> => {
      await timeIt(3, async () => void (await fetchJson(path))); // warm-up: JIT, plans, caches
      const r = await timeIt(ITERATIONS, async () => void (await fetchJson(path)));
      return { label: `GET ${path}`, ...r, load: load() };
    };
    const rawSql = async (period: Period): Promise<Row> => {
      await db.execute(rawIndexSql(period));
      const r = await timeIt(BASELINE_ITERATIONS, async () => void (await db.execute(rawIndexSql(period))));
      return { label: `raw SQL over requests, ${period}`, ...r, load: load() };
    };
    const print = (r: Row, vs?: Row) =>
      console.log(
        `  ${r.label.padEnd(52)} p50 ${fmt(r.p50).padStart(8)} ms  p95 ${fmt(r.p95).padStart(8)} ms` +
          (vs ? `  p95 ÷ ${vs.label.startsWith("raw") ? "raw SQL" : "/api/costs"} ${fmt(r.p95 / vs.p95, 3)}` : "") +
          `  (${fmt(r.p95 / TARGET_P95_MS, 2)}× target)` +
          (r.cpuMs === undefined ? "" : `  Node CPU ${fmt(r.cpuMs)} ms/request`) +
          `  load ${r.load}`,
      );

    try {
      await measureCheckpointBuilds(db, fetchJson);
      const periods = ["today", "week", "month", "all"] as const;
      const others = ["", "?sort=requests", "?sort=agent_id", "?period=month&sort=requests", "?period=month&sort=agent_id", "?limit=1000", "?offset=9900"];
      const paths = [...periods.map((p) => `/api/agents?period=${p}`), ...others.map((q) => `/api/agents${q}`)];
      const measured = await httpRounds(paths);
      const agentRows = paths.flatMap((p) => measured.get(p) ?? []);
      for (const period of periods) {
        console.log(`  -- period=${period}`);
        const idx = measured.get(`/api/agents?period=${period}`);
        if (!idx) continue;
        const costs = await http(`/api/costs?period=${period}`);
        const raw = await rawSql(period);
        print(idx);
        print(costs);
        print(raw);
        console.log(`  ratios: /api/agents p95 is ×${fmt(idx.p95 / costs.p95, 2)} /api/costs and ×${fmt(idx.p95 / raw.p95, 3)} the raw aggregate`);
        // Same answer: the first page's cost and probe counts equal the raw aggregate's.
        const page = await fetchJson<FleetIndex>(`/api/agents?period=${period}`);
        const naive = (await db.execute(rawIndexSql(period))) as unknown as { rows: { agent_id: string; tenant_id: string | null; cost: string; probe: string }[] };
        const same = naive.rows.every((n, i) => {
          const a = page.agents[i];
          return a !== undefined && a.agent_id === n.agent_id && a.tenant_id === n.tenant_id && Math.abs(a.cost_usd - Number(n.cost)) < 1e-9 && a.probe.requests === Number(n.probe);
        });
        console.log(`  first page (${page.agents.length} of ${fmt(page.total_agents, 0)} agents, ${page.online} online) equals the raw aggregate: ${same ? "yes" : "NO"}`);
      }
      console.log("  -- default and sorts");
      for (const q of others) {
        const r = measured.get(`/api/agents${q}`);
        if (r) print(r);
      }
      const worst = agentRows.reduce((a, b) => (b.p95 > a.p95 ? b : a));
      const over = agentRows.filter((r) => r.p95 >= TARGET_P95_MS);
      console.log(
        `  /api/agents: ${agentRows.length} queries, worst p95 ${fmt(worst.p95)} ms (${worst.label}); over ${TARGET_P95_MS} ms: ${over.map((r) => r.label.replace("GET /api/agents", "") || "(default)").join(", ") || "none"}`,
      );
    } finally {
      await new Promise<void>((r) => server.close(() => r()));
    }
  } finally {
    if (process.argv.includes("--keep")) {
      console.log(`  kept database: ${bench.url}`);
      await bench.database.close();
    } else await bench.drop();
  }
}

async function main() {
  const sizes = parseRowsArg(process.argv, [1_000_000]);
  console.log(
    `bench:agents — ${ITERATIONS} timed requests per query (sequential, the 11 queries round-robin after ${WARMUP_ROUNDS} unmeasured rounds; loopback, auth on), baselines after them (${BASELINE_ITERATIONS} runs of raw SQL); load average (1/5/15 min) beside each figure`,
  );
  for (const rows of sizes) await measure(rows);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
