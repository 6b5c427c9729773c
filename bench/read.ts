/**
 * bench:read — p50/p95 of the read path over HTTP at 1M and 10M request rows (a year of traffic),
 * against a baseline measured in the same run: the equivalent raw aggregate SQL over `requests`.
 * Targets (issue 37): flat, the 10M p95 at most 1.2× the 1M p95, and at most 0.5× its raw SQL at 10M.
 *   npm run bench:read -- [--rows 1000000,10000000] [--iterations 40]
 * /v1/sessions (first page) and room latency have their own bench: npm run bench:sessions.
 */
import type { AddressInfo } from "node:net";
import { loadavg } from "node:os";
import { serve } from "@hono/node-server";
import { type SQL, sql } from "drizzle-orm";
import { parseEnv } from "../src/config/env.js";
import { parseConfigText } from "../src/config/load.js";
import type { Db } from "../src/db/client.js";
import { createApp } from "../src/http/app.js";
import { silentLogger } from "../src/logging.js";
import { createServices } from "../src/compose.js";
import { createBenchDatabase, parseRowsArg, seedBenchData } from "./generate.js";
import { timeIt } from "./support.js";

const argIter = process.argv.indexOf("--iterations");
const ITERATIONS = argIter >= 0 ? Number(process.argv[argIter + 1]) : 40;
const BASELINE_ITERATIONS = 5;

const ENDPOINTS = ["/v1/costs?period=month", "/v1/latency?period=week", "/v1/metrics"] as const;
type Endpoint = (typeof ENDPOINTS)[number];

/** The same answers computed the naive way: aggregates over raw rows (the read path's baseline). */
function baselineSql(endpoint: Endpoint): SQL {
  const since = (d: number) => sql`ts >= now() - ${`${d} days`}::interval AND ts <= now()`;
  if (endpoint === "/v1/costs?period=month") {
    return sql`SELECT provider, model_id, project, sum(coalesce(cost_usd, 0)), count(*) FROM requests WHERE ${since(30)}
      GROUP BY GROUPING SETS ((provider), (model_id), (project), ())`;
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



interface Figures {
  rows: number;
  rollupRows: number;
  results: Record<Endpoint, { p50: number; p95: number; baseP50: number; baseP95: number }>;
}

async function measure(rows: number): Promise<Figures> {
  console.log(`\n== ${rows.toLocaleString("en")} request rows over a year ==`);
  const bench = await createBenchDatabase();
  try {
    const t0 = Date.now();
    await seedBenchData(bench, rows, new Date());
    console.log(`  generated in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
    const db: Db = bench.database.db;
    const counts = (await db.execute(
      sql`SELECT (SELECT count(*) FROM request_rollups) + (SELECT count(*) FROM request_rollups_daily)
        + (SELECT count(*) FROM request_model_rollups) + (SELECT count(*) FROM request_model_rollups_daily) AS n`,
    )) as unknown as { rows: { n: string }[] };
    const services = createServices({ database: bench.database, config: parseConfigText("", "bench.yaml", {}), env: parseEnv({}), log: silentLogger });
    const app = createApp(services);
    const server = serve({ fetch: app.fetch, port: 0, hostname: "127.0.0.1" });
    await new Promise<void>((r) => server.once("listening", () => r()));
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const results = {} as Figures["results"];
    console.log(`  load average when measuring: ${loadavg().map((l) => l.toFixed(2)).join(" ")}`);
    try {
      for (const ep of ENDPOINTS) {
        const hit = async () => {
          const res = await fetch(base + ep);
          if (res.status !== 200) throw new Error(`${ep} answered ${res.status}`);
          await res.arrayBuffer();
        };
        await timeIt(5, hit); // warm-up: JIT, plans, caches
        const served = await timeIt(ITERATIONS, hit);
        await timeIt(1, async () => void (await db.execute(baselineSql(ep))));
        const baseline = await timeIt(BASELINE_ITERATIONS, async () => void (await db.execute(baselineSql(ep))));
        results[ep] = { ...served, baseP50: baseline.p50, baseP95: baseline.p95 };
        console.log(
          `  ${ep.padEnd(26)} p50 ${served.p50.toFixed(1).padStart(6)} ms  p95 ${served.p95.toFixed(1).padStart(6)} ms   ` +
            `baseline raw SQL p50 ${baseline.p50.toFixed(1).padStart(7)} ms p95 ${baseline.p95.toFixed(1).padStart(7)} ms   ` +
            `ratio p95/baseline ${(served.p95 / baseline.p95).toFixed(3)}`,
        );
      }
    } finally {
      await new Promise<void>((r) => server.close(() => r()));
    }
    return { rows, rollupRows: Number(counts.rows[0]?.n ?? 0), results };
  } finally {
    await bench.drop();
  }
}

async function main() {
  const sizes = parseRowsArg(process.argv, [1_000_000, 10_000_000]);
  console.log(`load average at the start: ${loadavg().map((l) => l.toFixed(2)).join(" ")}`);
  console.log(`bench:read — ${ITERATIONS} timed requests per endpoint (sequential, loopback), baseline ${BASELINE_ITERATIONS} runs of raw SQL`);
  console.log("  /v1/sessions and room latency: see npm run bench:sessions (sessions, turns and requests generated together).");
  const all: Figures[] = [];
  for (const rows of sizes) all.push(await measure(rows));
  const first = all[0];
  const last = all.at(-1);
  if (first && last && first !== last) {
    console.log(`\n== ${last.rows.toLocaleString("en")} vs ${first.rows.toLocaleString("en")} rows (rollup rows ${last.rollupRows} vs ${first.rollupRows}) ==`);
    for (const ep of ENDPOINTS) {
      const a = first.results[ep];
      const b = last.results[ep];
      const flat = b.p95 / a.p95;
      const vsRaw = b.p95 / b.baseP95;
      const ok = flat <= 1.2 && vsRaw <= 0.5;
      console.log(
        `  ${ep.padEnd(26)} p95 ${b.p95.toFixed(1)} ms vs ${a.p95.toFixed(1)} ms: ×${flat.toFixed(2)}, ${vsRaw.toFixed(3)}× raw SQL ${ok ? "OK" : "MISSES TARGET"} (≤ 1.2×, ≤ 0.5× raw SQL)`,
      );
    }
  }
  console.log(`load average at the end: ${loadavg().map((l) => l.toFixed(2)).join(" ")}`);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
