/**
 * bench:dashboard — the web app's three figures against the targets, measured in one run:
 *   1. built JS gzipped (target < 250 KB),
 *   2. navigation → the overview's figures painted in headless Chromium (target < 1 s),
 *   3. p95 of every /api (and /v1) route the pages call (target < 50 ms),
 * over a database of N generated request rows (bench/generate.ts: a year of traffic, rollups built).
 *   npm run bench:dashboard -- [--rows 10000000] [--iterations 40]
 */
import { execFileSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { serve } from "@hono/node-server";
import { sql } from "drizzle-orm";
import { parseEnv } from "../src/config/env.js";
import { parseConfigText } from "../src/config/load.js";
import { createApp } from "../src/http/app.js";
import { silentLogger } from "../src/logging.js";
import { createServices } from "../src/compose.js";
import { chromiumAvailable, CHROMIUM_INSTALL, launchBrowser } from "../test/support/browser.js";
import { createBenchDatabase, generateBenchData, parseRowsArg } from "./generate.js";
import { fmt, ROOT } from "./support.js";

const TARGET_GZIP_KB = 250;
const TARGET_PAINT_MS = 1000;
const TARGET_P95_MS = 50;
const argIter = process.argv.indexOf("--iterations");
const ITERATIONS = argIter >= 0 ? Number(process.argv[argIter + 1]) : 40;
const PAINT_RUNS = 7;
/** Auth on, as in production: the API calls and the browser carry this operator key. */
const BENCH_KEY = "bench-operator-key-0123456789";
const authHeaders = { authorization: `Bearer ${BENCH_KEY}` };

const percentile = (sorted: number[], q: number) => sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))] ?? Number.NaN;

function bundleSize(): { files: number; rawKb: number; gzipKb: number } {
  execFileSync(process.execPath, [join(ROOT, "node_modules/vite/bin/vite.js"), "build", "dashboard", "--logLevel", "error"], {
    cwd: ROOT,
    stdio: "inherit",
    env: { ...process.env, NODE_ENV: "production" },
  });
  const dir = join(ROOT, "dashboard/dist/assets");
  const js = readdirSync(dir).filter((f) => f.endsWith(".js"));
  let raw = 0;
  let gz = 0;
  for (const f of js) {
    const b = readFileSync(join(dir, f));
    raw += b.length;
    gz += gzipSync(b, { level: 9 }).length;
  }
  return { files: js.length, rawKb: raw / 1024, gzipKb: gz / 1024 };
}

async function main() {
  const [rows = 10_000_000] = parseRowsArg(process.argv, [10_000_000]);
  const bundle = bundleSize();
  console.log(`bundle: ${bundle.files} JS file(s), ${fmt(bundle.rawKb)} KB raw, ${fmt(bundle.gzipKb)} KB gzipped (target < ${TARGET_GZIP_KB} KB, ratio ${fmt(bundle.gzipKb / TARGET_GZIP_KB, 2)})`);

  const bench = await createBenchDatabase();
  try {
    const t0 = Date.now();
    await generateBenchData(bench.database, rows, new Date());
    console.log(`generated ${fmt(rows, 0)} request rows + rollups in ${fmt((Date.now() - t0) / 1000)} s`);
    const config = parseConfigText(
      `providers:\n  openai: { api_key: sk-bench-0000 }\n  deepgram: { api_key: dg-bench-0000 }\n  elevenlabs: { api_key: el-bench-0000 }\nauth:\n  api_keys:\n    - ${BENCH_KEY}\n`,
      "bench.yaml",
      {},
    );
    const services = createServices({ database: bench.database, config, env: parseEnv({}), log: silentLogger });
    const app = createApp(services);
    const server = await new Promise<ReturnType<typeof serve>>((resolve) => {
      const s = serve({ fetch: app.fetch, port: 0, hostname: "127.0.0.1" }, () => resolve(s));
    });
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const db = bench.database.db;
    const one = (await db.execute(sql`SELECT id::text AS id FROM requests ORDER BY ts DESC LIMIT 1`)) as unknown as { rows: { id: string }[] };
    const logId = one.rows[0]?.id ?? "00000000-0000-4000-8000-000000000000";

    // Every route a page calls, with the queries the pages send by default.
    const routes = [
      "/api/whoami",
      "/api/overview",
      "/api/costs?period=today",
      "/api/costs?period=month",
      "/api/costs?period=all",
      "/api/costs/series?period=week&bucket=hour",
      "/api/costs/series?period=today",
      "/api/costs/series?period=month",
      "/api/costs/series?period=all",
      "/api/latency?period=today",
      "/api/latency?period=week",
      "/api/latency/series?period=today",
      "/api/latency/series?period=week",
      "/api/latency/modalities?period=today",
      "/api/logs?limit=1000",
      "/api/logs?limit=1000&status=error",
      `/api/logs/${logId}`,
      "/api/sessions?limit=50",
      "/api/calls?limit=200",
      "/api/projects",
      "/api/models",
      "/v1/agents",
      "/v1/providers",
      "/v1/billing/usage",
      "/v1/billing/rate-card",
      "/v1/billing/rate-card/gaps",
      "/v1/api-keys?include_revoked=true",
      "/v1/audit-log?limit=500",
    ];
    const results: { route: string; p50: number; p95: number; status: number }[] = [];
    for (const route of routes) {
      const times: number[] = [];
      let status = 0;
      for (let i = 0; i < 2; i++) await (await fetch(base + route, { headers: authHeaders })).arrayBuffer(); // warm
      for (let i = 0; i < ITERATIONS; i++) {
        const s = performance.now();
        const res = await fetch(base + route, { headers: authHeaders });
        await res.arrayBuffer();
        times.push(performance.now() - s);
        status = res.status;
      }
      times.sort((a, b) => a - b);
      const r = { route, p50: percentile(times, 0.5), p95: percentile(times, 0.95), status };
      results.push(r);
      console.log(`  ${route.padEnd(48)} ${String(status)}  p50 ${fmt(r.p50).padStart(7)} ms  p95 ${fmt(r.p95).padStart(7)} ms  (${fmt(r.p95 / TARGET_P95_MS, 2)}× target)`);
    }
    const over = results.filter((r) => r.p95 >= TARGET_P95_MS);
    console.log(`routes: ${results.length}, p95 under ${TARGET_P95_MS} ms: ${results.length - over.length}; over: ${over.map((r) => r.route).join(", ") || "none"}`);

    if (!chromiumAvailable()) {
      console.log(`paint: skipped, no Chromium (${CHROMIUM_INSTALL})`);
    } else {
      const browser = await launchBrowser();
      const paints: number[] = [];
      for (let i = 0; i < PAINT_RUNS; i++) {
        const page = await browser.newPage();
        // A signed-in tab being reloaded: the key is already in this tab's sessionStorage.
        await page.addInitScript((key) => sessionStorage.setItem("voxgate.key", key), BENCH_KEY);
        await page.goto(`${base}/`);
        await page.waitForFunction(() => /\$\d/.test(document.querySelector('[data-testid="tile-cost-today"] .tile-value')?.textContent ?? ""));
        // performance.now() is ms since navigation start; one frame later the figures are painted.
        const ms = await page.evaluate(() => new Promise<number>((r) => requestAnimationFrame(() => requestAnimationFrame(() => r(performance.now())))));
        paints.push(ms);
        await page.close();
      }
      await browser.close();
      paints.sort((a, b) => a - b);
      const median = percentile(paints, 0.5);
      console.log(`paint: navigation → overview figures painted, ${PAINT_RUNS} runs: median ${fmt(median, 0)} ms, max ${fmt(paints[paints.length - 1] ?? 0, 0)} ms (target < ${TARGET_PAINT_MS} ms, ratio ${fmt(median / TARGET_PAINT_MS, 2)})`);
    }
    await new Promise<void>((r) => server.close(() => r()));
  } finally {
    await bench.drop();
  }
}

await main();
