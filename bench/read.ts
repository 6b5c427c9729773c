/**
 * bench:read — p50/p95 of the read path over HTTP at 1M and 10M request rows (a year of traffic),
 * against a baseline measured in the same run: the equivalent raw aggregate SQL over `requests`.
 * Targets (issue 37): flat, the 10M p95 at most 1.2× the 1M p95, and at most 0.5× its raw SQL at 10M.
 * Endpoints: costs (month), latency (week), metrics, the dashboard's latency series (a week of hours, the
 * costliest series) and billing usage (the current month).
 *   npm run bench:read -- [--rows 1000000,10000000] [--iterations 40] [--keep] [--reuse <db>,<db>]
 * Every database is seeded (or reopened) first, then the sizes are measured interleaved, request by
 * request, so a change of the machine's load between sizes does not read as growth.
 * --keep leaves the seeded databases in place and prints their names; --reuse <names> measures kept
 * ones instead of seeding (migrated, then topped up to now: the rows since their newest row at the
 * year's density, and those days' rollups rebuilt). A 10M seed takes ~30 minutes on this machine.
 * BENCH_BASE_DIST=<dir> (a built tree of another commit) serves each database a second time with that
 * build's app, interleaved with this one's: the A/B of a read-path change on the same data, same run.
 * /v1/sessions (first page) and room latency have their own bench: npm run bench:sessions.
 */
import type { AddressInfo } from "node:net";
import { loadavg } from "node:os";
import { pathToFileURL } from "node:url";
import { serve } from "@hono/node-server";
import { type SQL, sql } from "drizzle-orm";
import { parseEnv } from "../src/config/env.js";
import { parseConfigText } from "../src/config/load.js";
import { openDatabase } from "../src/db/client.js";
import { createApp } from "../src/http/app.js";
import { silentLogger } from "../src/logging.js";
import { createServices } from "../src/compose.js";
import { type BenchDatabase, createBenchDatabase, openBenchDatabase, parseRowsArg, seedBenchData, topUpBenchData } from "./generate.js";
import { percentile, timeIt } from "./support.js";

const argValue = (flag: string) => {
  const i = process.argv.indexOf(flag);
  return i >= 0 ? process.argv[i + 1] : undefined;
};
const ITERATIONS = Number(argValue("--iterations") ?? 40);
const BASELINE_ITERATIONS = 5;
const KEEP = process.argv.includes("--keep");
const REUSE = argValue("--reuse")?.split(",");
const BASE_DIST = process.env.BENCH_BASE_DIST;

const ENDPOINTS = [
  "/v1/costs?period=month",
  "/v1/latency?period=week",
  "/v1/metrics",
  "/api/latency/series?period=week&bucket=hour",
  "/v1/billing/usage",
] as const;
type Endpoint = (typeof ENDPOINTS)[number];

/** The same answers computed the naive way: aggregates over raw rows (the read path's baseline). */
function baselineSql(endpoint: Endpoint): SQL {
  const since = (d: number) => sql`ts >= now() - ${`${d} days`}::interval AND ts <= now()`;
  if (endpoint === "/v1/costs?period=month") {
    return sql`SELECT provider, model_id, project, sum(coalesce(cost_usd, 0)), count(*) FROM requests WHERE ${since(30)}
      GROUP BY GROUPING SETS ((provider), (model_id), (project), ())`;
  }
  if (endpoint === "/api/latency/series?period=week&bucket=hour") {
    return sql`SELECT date_trunc('hour', ts), count(*), percentile_cont(ARRAY[0.5, 0.95]) WITHIN GROUP (ORDER BY ttfb_ms),
      percentile_cont(ARRAY[0.5, 0.95]) WITHIN GROUP (ORDER BY total_latency_ms) FROM requests WHERE ${since(7)} AND NOT is_probe GROUP BY 1`;
  }
  if (endpoint === "/v1/billing/usage") {
    // The current UTC month, as the route's default window.
    return sql`SELECT tenant_id, modality, model_id, count(*), sum(coalesce(cost_usd, 0)), sum(coalesce(rated_price_usd, 0)) FROM requests
      WHERE ts >= date_trunc('month', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' AND ts <= now() GROUP BY GROUPING SETS ((tenant_id), (tenant_id, modality, model_id))`;
  }
  if (endpoint === "/v1/latency?period=week") {
    return sql`SELECT model_id, count(*), avg(ttfb_ms), percentile_cont(ARRAY[0.5, 0.95, 0.99]) WITHIN GROUP (ORDER BY ttfb_ms),
      avg(total_latency_ms), percentile_cont(ARRAY[0.5, 0.95, 0.99]) WITHIN GROUP (ORDER BY total_latency_ms)
      FROM requests WHERE ${since(7)} AND NOT is_probe GROUP BY model_id`;
  }
  return sql`SELECT provider, project, sum(coalesce(cost_usd, 0)), count(*),
      percentile_cont(ARRAY[0.5, 0.9, 0.95, 0.99]) WITHIN GROUP (ORDER BY ttfb_ms) FILTER (WHERE NOT is_probe),
      percentile_cont(ARRAY[0.5, 0.9, 0.95, 0.99]) WITHIN GROUP (ORDER BY total_latency_ms) FILTER (WHERE NOT is_probe)
    FROM requests WHERE ${since(1)} GROUP BY GROUPING SETS ((provider), (project), ())`;
}

/** One database: its size and its raw-SQL baseline per endpoint. */
interface Sized {
  rows: number;
  bench: BenchDatabase;
  rollupRows: number;
  baseline: Partial<Record<Endpoint, { p50: number; p95: number }>>;
}

/** One app serving one database: this tree's or BENCH_BASE_DIST's. */
interface Served {
  db: Sized;
  build: "this" | "base";
  base: string;
  close(): Promise<void>;
  times: Partial<Record<Endpoint, number[]>>;
}

/** The modules an app is made of, from this tree or from a built tree of another commit. */
interface AppModules {
  openDatabase: typeof openDatabase;
  createServices: typeof createServices;
  createApp: typeof createApp;
  parseConfigText: typeof parseConfigText;
  parseEnv: typeof parseEnv;
  silentLogger: typeof silentLogger;
}

const THIS_BUILD: AppModules = { openDatabase, createServices, createApp, parseConfigText, parseEnv, silentLogger };

async function baseBuild(dir: string): Promise<AppModules> {
  const load = (p: string) => import(pathToFileURL(`${dir}/dist/${p}`).href);
  const [client, compose, app, config, env, logging] = await Promise.all(
    ["db/client.js", "compose.js", "http/app.js", "config/load.js", "config/env.js", "logging.js"].map(load),
  );
  return { ...client, ...compose, ...app, ...config, ...env, ...logging } as AppModules;
}

/** Serves a database on a loopback port with a build's app (its own pool, as a replica would). */
async function serveWith(m: AppModules, build: Served["build"], db: Sized): Promise<Served> {
  const database = build === "this" ? db.bench.database : await m.openDatabase({ url: db.bench.url });
  const services = m.createServices({ database, config: m.parseConfigText("", "bench.yaml", {}), env: m.parseEnv({}), log: m.silentLogger });
  const server = serve({ fetch: m.createApp(services).fetch, port: 0, hostname: "127.0.0.1" });
  await new Promise<void>((r) => server.once("listening", () => r()));
  return {
    db,
    build,
    base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    times: {},
    async close() {
      await new Promise<void>((r) => server.close(() => r()));
      if (build === "base") await database.close();
    },
  };
}

/** A database seeded here (kept or not) or kept by an earlier run, ready to serve and counted. */
async function prepare(rows: number | null, name: string | null): Promise<Sized> {
  const now = new Date();
  let bench: BenchDatabase;
  let n: number;
  if (name !== null) {
    console.log(`\n== kept database ${name}: migrating, topping up to now ==`);
    bench = await openBenchDatabase(name);
    const t0 = Date.now();
    n = await topUpBenchData(bench, now);
    console.log(`  ${n.toLocaleString("en")} request rows (topped up in ${((Date.now() - t0) / 1000).toFixed(1)} s)`);
  } else {
    n = rows ?? 0;
    console.log(`\n== ${n.toLocaleString("en")} request rows over a year ==`);
    bench = await createBenchDatabase();
    // Known before a long seed: the kept database can be looked at (or dropped) early.
    if (KEEP) console.log(`  seeding kept database ${bench.name}`);
    const t0 = Date.now();
    await seedBenchData(bench, n, now);
    console.log(`  generated in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  }
  const counts = (await bench.database.db.execute(
    sql`SELECT (SELECT count(*) FROM request_rollups) + (SELECT count(*) FROM request_rollups_daily)
      + (SELECT count(*) FROM request_model_rollups) + (SELECT count(*) FROM request_model_rollups_daily) AS n`,
  )) as unknown as { rows: { n: string }[] };
  return { rows: n, bench, rollupRows: Number(counts.rows[0]?.n ?? 0), baseline: {} };
}

const label = (s: Served) => `${(s.db.rows / 1e6).toFixed(s.db.rows < 1e6 ? 2 : 0)}M${BASE_DIST ? ` ${s.build}` : ""}`;
const p = (times: number[] | undefined, q: number) => percentile([...(times ?? [])].sort((a, b) => a - b), q);

/** Each endpoint: warm-up on every app, then ITERATIONS rounds of one request per app (order turned each round), then raw SQL. */
async function measure(apps: Served[], sized: Sized[]): Promise<void> {
  for (const ep of ENDPOINTS) {
    const hit = async (s: Served) => {
      const t0 = performance.now();
      const res = await fetch(s.base + ep);
      if (res.status !== 200) throw new Error(`${ep} answered ${res.status}`);
      await res.arrayBuffer();
      return performance.now() - t0;
    };
    for (const s of apps) for (let i = 0; i < 5; i++) await hit(s); // warm-up: JIT, plans, caches
    for (let i = 0; i < ITERATIONS; i++) {
      const order = i % 2 === 0 ? apps : [...apps].reverse();
      for (const s of order) {
        const took = await hit(s);
        const times = s.times[ep] ?? [];
        times.push(took);
        s.times[ep] = times;
      }
    }
    for (const d of sized) {
      const run = async () => void (await d.bench.database.db.execute(baselineSql(ep)));
      await timeIt(1, run);
      d.baseline[ep] = await timeIt(BASELINE_ITERATIONS, run);
    }
    console.log(`  ${ep} (load ${loadavg()[0]?.toFixed(2)})`);
    for (const s of apps) {
      const b = s.db.baseline[ep];
      console.log(
        `    ${label(s).padEnd(9)} p50 ${p(s.times[ep], 0.5).toFixed(1).padStart(6)} ms  p95 ${p(s.times[ep], 0.95).toFixed(1).padStart(6)} ms   ` +
          `raw SQL p50 ${b?.p50.toFixed(1).padStart(7)} ms p95 ${b?.p95.toFixed(1).padStart(7)} ms   ratio p95/raw SQL ${((p(s.times[ep], 0.95) ?? 0) / (b?.p95 ?? 1)).toFixed(3)}`,
      );
    }
  }
}

function summarize(apps: Served[], sized: Sized[]): void {
  const first = sized[0];
  const last = sized.at(-1);
  if (!first || !last || first === last) return;
  const of = (d: Sized, build: Served["build"]) => apps.find((s) => s.db === d && s.build === build);
  for (const build of BASE_DIST ? (["this", "base"] as const) : (["this"] as const)) {
    const a = of(first, build);
    const b = of(last, build);
    if (!a || !b) continue;
    console.log(`\n== ${build === "this" ? "this build" : "BENCH_BASE_DIST"}: ${label(b)} vs ${label(a)} (rollup rows ${last.rollupRows} vs ${first.rollupRows}) ==`);
    for (const ep of ENDPOINTS) {
      const flat = p(b.times[ep], 0.95) / p(a.times[ep], 0.95);
      const vsRaw = p(b.times[ep], 0.95) / (last.baseline[ep]?.p95 ?? Number.NaN);
      const ok = flat <= 1.2 && vsRaw <= 0.5;
      console.log(
        `  ${ep.padEnd(44)} p95 ${p(b.times[ep], 0.95).toFixed(1)} ms vs ${p(a.times[ep], 0.95).toFixed(1)} ms: ×${flat.toFixed(2)} ` +
          `(p50 ×${(p(b.times[ep], 0.5) / p(a.times[ep], 0.5)).toFixed(2)}), ${vsRaw.toFixed(3)}× raw SQL ${ok ? "OK" : "MISSES TARGET"} (≤ 1.2×, ≤ 0.5× raw SQL)`,
      );
    }
  }
  if (BASE_DIST) {
    console.log("\n== this build / BENCH_BASE_DIST, same database, same run (p50, p95) ==");
    for (const d of sized) {
      const t = of(d, "this");
      const b = of(d, "base");
      if (!t || !b) continue;
      for (const ep of ENDPOINTS) {
        const r = (q: number) => (p(t.times[ep], q) / p(b.times[ep], q)).toFixed(2);
        console.log(`  ${label(t).split(" ")[0]?.padEnd(4)} ${ep.padEnd(44)} ×${r(0.5)} / ×${r(0.95)}`);
      }
    }
  }
}

async function main() {
  console.log(`load average at the start: ${loadavg().map((l) => l.toFixed(2)).join(" ")}`);
  console.log(`bench:read — ${ITERATIONS} timed requests per endpoint and app (sequential, loopback, sizes interleaved), baseline ${BASELINE_ITERATIONS} runs of raw SQL`);
  console.log("  /v1/sessions and room latency: see npm run bench:sessions (sessions, turns and requests generated together).");
  const sized: Sized[] = [];
  const apps: Served[] = [];
  try {
    if (REUSE) for (const name of REUSE) sized.push(await prepare(null, name));
    else for (const rows of parseRowsArg(process.argv, [1_000_000, 10_000_000])) sized.push(await prepare(rows, null));
    sized.sort((a, b) => a.rows - b.rows);
    const base = BASE_DIST ? await baseBuild(BASE_DIST) : null;
    for (const d of sized) {
      apps.push(await serveWith(THIS_BUILD, "this", d));
      if (base) apps.push(await serveWith(base, "base", d));
    }
    console.log(`\nload average when measuring: ${loadavg().map((l) => l.toFixed(2)).join(" ")}`);
    await measure(apps, sized);
    summarize(apps, sized);
  } finally {
    for (const s of apps) await s.close();
    for (const d of sized) {
      if (KEEP || REUSE) await d.bench.database.close();
      else await d.bench.drop();
    }
    if (KEEP || REUSE) console.log(`\nkept databases (DROP DATABASE … WITH (FORCE) when done): --reuse ${sized.map((d) => d.bench.name).join(",")}`);
  }
  console.log(`load average at the end: ${loadavg().map((l) => l.toFixed(2)).join(" ")}`);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
