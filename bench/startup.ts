/**
 * bench:startup — time from spawning `voxgate serve` to a healthy /health, on PGlite (fresh and
 * existing data directory) and on Postgres, plus idle RSS. Baseline in the same run: a bare
 * `node -e` HTTP server answering /health (the floor any Node service pays).
 * Targets: under 1.5 s and under 120 MB.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createBenchDatabase, fmt, type BenchServer, startServer } from "./support.js";

const RUNS = Number(process.env.BENCH_RUNS ?? 3);

async function bareNodeMs(): Promise<number> {
  const port = 40000 + Math.floor(Math.random() * 10000);
  const t0 = performance.now();
  const child = spawn(process.execPath, [
    "-e",
    `require("node:http").createServer((q,s)=>s.end("ok")).listen(${port},"127.0.0.1")`,
  ]);
  for (;;) {
    try {
      if ((await fetch(`http://127.0.0.1:${port}/health`)).ok) break;
    } catch {}
    await new Promise((r) => setTimeout(r, 10));
  }
  const ms = performance.now() - t0;
  child.kill();
  return ms;
}

async function measure(label: string, env: () => Record<string, string | undefined>, baseline: number) {
  const times: number[] = [];
  let rss = 0;
  for (let i = 0; i < RUNS; i++) {
    const s: BenchServer = await startServer(env());
    times.push(s.startupMs);
    await new Promise((r) => setTimeout(r, 1500));
    rss = Math.max(rss, s.rssBytes());
    await s.stop();
  }
  const median = [...times].sort((a, b) => a - b)[Math.floor(times.length / 2)] ?? 0;
  console.log(
    `  ${label.padEnd(26)} ${fmt(median, 0)} ms median of ${RUNS} (${fmt(median / baseline, 1)} × bare node)  idle RSS ${fmt(rss / 1048576, 0)} MB`,
  );
}

async function main() {
  const base = [await bareNodeMs(), await bareNodeMs(), await bareNodeMs()].sort((a, b) => a - b)[1] ?? 1;
  console.log(`bench:startup  spawn → healthy /health   (targets < 1500 ms, < 120 MB)`);
  console.log(`  bare node http server       ${fmt(base, 0)} ms (baseline)`);
  const home = mkdtempSync(join(tmpdir(), "vg-bench-startup-"));
  let fresh = 0;
  await measure("PGlite, new data dir", () => ({ HOME: home, DATABASE_URL: undefined, VOXGATE_DB_PATH: join(home, `db${fresh++}`) }), base);
  await measure("PGlite, existing data dir", () => ({ HOME: home, DATABASE_URL: undefined, VOXGATE_DB_PATH: join(home, "db0") }), base);
  const pgdb = await createBenchDatabase("startup");
  try {
    await measure("Postgres", () => ({ HOME: home, DATABASE_URL: pgdb.url }), base);
  } finally {
    await pgdb.drop();
    rmSync(home, { recursive: true, force: true });
  }
}

await main();
