/**
 * bench:ingest: 4 concurrent clients post 500-record batches to a real collector child process on
 * a fresh Postgres database for BENCH_SECONDS (default 20); records/s, p50/p99 batch latency and
 * collector RSS. Baseline in the same run: the same rows written straight into the same tables
 * (`requests`, and the sessions they fold into) with INSERT … SELECT FROM unnest(...) over 4
 * connections: the fastest raw path without COPY, and without validation, rating or HTTP.
 *
 * With BENCH_BASE_DIST=<dir> (a checkout of another commit, built: `git worktree add --detach <dir>
 * <commit>`, link node_modules, `npx tsc -p tsconfig.build.json`), a second collector from
 * <dir>/dist/cli/main.js on its own fresh database, in the same interleaved rounds (A/B in one run),
 * each build against the raw insert into its own schema (a schema change moves that baseline too).
 *
 *   npm run bench:ingest   (env: BENCH_SECONDS=20, BENCH_RUNTIME=dist|tsx, BENCH_BASE_DIST=<dir>,
 *                           BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5432/test: only used to CREATE/DROP
 *                           a fresh voxgate_bench_* database)
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import pg from "pg";
import { Pool } from "undici";
import { openDatabase } from "../src/db/client.js";
import { runMigrations } from "../src/db/migrate.js";
import { sketchOf, summarize } from "../src/stats/summary.js";
import { backendCpu, backendCpuSpent, createBenchDatabase } from "./support.js";

const SECONDS = Number(process.env.BENCH_SECONDS ?? 20);
const BASELINE_SECONDS = Math.min(SECONDS, 10);
const CLIENTS = 4;
const ROUNDS = 4;
const BATCH = 500;
const KEY = "bench-ingest-key-0123456789";
/** dist (default): what `npm start` runs, built first; tsx: straight from the TypeScript source. */
const RUNTIME = process.env.BENCH_RUNTIME === "tsx" ? "tsx" : "dist";
const ROOT = fileURLToPath(new URL("..", import.meta.url));
const DIST_MAIN = join(ROOT, "dist", "cli", "main.js");
const BASE_DIST = process.env.BENCH_BASE_DIST;

const MODELS = [
  { modality: "llm", model_id: "openai/gpt-4.1-mini" },
  { modality: "stt", model_id: "deepgram/nova-3" },
  { modality: "tts", model_id: "elevenlabs/eleven_flash_v2_5" },
] as const;

function makeBatch(): Record<string, unknown>[] {
  const sessions = Array.from({ length: 10 }, () => `bench-${randomUUID()}`);
  // One millisecond apart, as a producer's records are: a batch of one timestamp would let the
  // insert read it once (a column of one value is sent once: src/ingest/store-requests.ts).
  const first = Date.now() - BATCH;
  return Array.from({ length: BATCH }, (_, i) => {
    const m = MODELS[i % 3] ?? MODELS[0];
    return {
      id: randomUUID(),
      timestamp: (first + i) / 1000,
      modality: m.modality,
      model_id: m.model_id,
      project: "bench",
      session_id: sessions[i % sessions.length],
      room_name: "bench-room",
      agent_id: "bench-agent",
      ttfb_ms: 120 + (i % 50),
      total_latency_ms: 400 + (i % 200),
      cost_usd: 0.000123,
      input_tokens: m.modality === "llm" ? 350 : undefined,
      output_tokens: m.modality === "llm" ? 60 : undefined,
      audio_seconds: m.modality === "stt" ? 3.2 : undefined,
      characters: m.modality === "tts" ? 140 : undefined,
    };
  });
}


/** `main`: another build's dist/cli/main.js (BENCH_BASE_DIST); null for this tree's. */
async function spawnCollector(url: string, main: string | null = null): Promise<{ child: ChildProcess; base: string; cwd: string }> {
  const cwd = mkdtempSync(join(tmpdir(), "voxgate-bench-"));
  const own = RUNTIME === "tsx" ? ["--import", import.meta.resolve("tsx"), fileURLToPath(new URL("../src/cli/main.ts", import.meta.url))] : [DIST_MAIN];
  const args = main === null ? own : [main];
  // BENCH_COLLECTOR_NODE_ARGS (e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof") profiles the collector.
  const nodeArgs = (process.env.BENCH_COLLECTOR_NODE_ARGS ?? "").split(" ").filter(Boolean);
  const child = spawn(process.execPath, [...nodeArgs, ...args, "serve", "--port", "0", "--host", "127.0.0.1"], {
    cwd,
    env: { PATH: process.env.PATH ?? "", HOME: cwd, DATABASE_URL: url, VOXGATE_API_KEY: KEY, LOG_LEVEL: "info" },
    stdio: ["ignore", "pipe", "inherit"],
  });
  const port = await new Promise<number>((resolve, reject) => {
    let out = "";
    child.once("exit", (code) => {
      rmSync(cwd, { recursive: true, force: true });
      reject(new Error(`collector exited ${code}:\n${out}`));
    });
    child.stdout?.on("data", (c: Buffer) => {
      if (out.length < 100_000) out += c.toString();
      const m = /"port":(\d+)[^\n]*"msg":"voxgate listening"/.exec(out);
      if (m) resolve(Number(m[1]));
    });
  });
  return { child, base: `http://127.0.0.1:${port}`, cwd };
}

/** CPU seconds (user + system) a process has used so far, from /proc (clock ticks of 10 ms). */
function cpuSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]?.split(" ") ?? [];
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

function rssBytes(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  return m ? Number(m[1]) * 1024 : 0;
}

/** End to end: CLIENTS loops posting BATCH-record batches over HTTP for SECONDS. */
async function endToEnd(base: string, pid: number, seconds: number) {
  const pool = new Pool(base, { connections: CLIENTS });
  const latencies: number[] = [];
  let records = 0;
  let failures = 0;
  let peakRss = 0;
  const rssTimer = setInterval(() => (peakRss = Math.max(peakRss, rssBytes(pid))), 250);
  const deadline = performance.now() + seconds * 1000;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: CLIENTS }, async () => {
      while (performance.now() < deadline) {
        const body = JSON.stringify(makeBatch());
        const t0 = performance.now();
        const res = await pool.request({
          path: "/v1/ingest",
          method: "POST",
          headers: { "content-type": "application/json", authorization: `Bearer ${KEY}` },
          body,
        });
        const answer = (await res.body.json()) as { accepted?: number };
        latencies.push(performance.now() - t0);
        if (res.statusCode === 200 && answer.accepted === BATCH) records += BATCH;
        else failures++;
      }
    }),
  );
  const elapsed = (performance.now() - started) / 1000;
  clearInterval(rssTimer);
  await pool.close();
  return { records, elapsed, latencies, failures, peakRss };
}

/** Baseline: the same rows straight into requests via INSERT … SELECT FROM unnest, CLIENTS connections. */
async function rawBaseline(url: string, seconds: number) {
  const pg0 = await backendCpu(url);
  const pool = new pg.Pool({ connectionString: url, max: CLIENTS });
  let rows = 0;
  let batches = 0;
  const deadline = performance.now() + seconds * 1000;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: CLIENTS }, async () => {
      while (performance.now() < deadline) {
        const b = makeBatch();
        const col = (k: string) => b.map((r) => (r[k] === undefined ? null : r[k]));
        await pool.query(
          `INSERT INTO requests (id, ts, tenant_id, project, session_id, room_name, agent_id, modality, model_id, provider,
             status, ttfb_ms, total_latency_ms, cost_usd, rated_price_usd, rate_rule, pricing, input_tokens, output_tokens,
             audio_seconds, characters, input_units, output_units)
           SELECT * FROM unnest($1::uuid[], $2::timestamptz[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[],
             $8::text[], $9::text[], $10::text[], $11::text[], $12::float8[], $13::float8[], $14::numeric[], $15::numeric[],
             $16::text[], $17::text[], $18::bigint[], $19::bigint[], $20::float8[], $21::bigint[], $22::float8[], $23::float8[])`,
          [
            col("id"),
            b.map((r) => new Date(Number(r.timestamp) * 1000).toISOString()),
            b.map(() => null),
            col("project"),
            col("session_id"),
            col("room_name"),
            col("agent_id"),
            col("modality"),
            col("model_id"),
            b.map((r) => String(r.model_id).split("/")[0]),
            b.map(() => "success"),
            col("ttfb_ms"),
            col("total_latency_ms"),
            col("cost_usd"),
            col("cost_usd"),
            b.map(() => "cost_plus:1"),
            b.map(() => "priced"),
            col("input_tokens"),
            col("output_tokens"),
            col("audio_seconds"),
            col("characters"),
            b.map(() => null),
            b.map(() => null),
          ],
        );
        // …and the same sessions rows, pre-aggregated in memory: what ingest writes, minus the checks.
        const sessions = new Map<string, { n: number; cost: number; modalities: Set<string>; ts: number }>();
        for (const r of b) {
          const s = sessions.get(String(r.session_id)) ?? { n: 0, cost: 0, modalities: new Set<string>(), ts: Number(r.timestamp) };
          s.n++;
          s.cost += Number(r.cost_usd);
          s.modalities.add(String(r.modality));
          sessions.set(String(r.session_id), s);
        }
        const list = [...sessions];
        await pool.query(
          `INSERT INTO sessions (id, project, room_name, agent_id, started_at, ended_at, modalities, request_count, total_cost_usd)
           SELECT id, 'bench', 'bench-room', 'bench-agent', ts, ts, string_to_array(m, ','), n, cost
           FROM unnest($1::text[], $2::timestamptz[], $3::text[], $4::int[], $5::numeric[]) AS u(id, ts, m, n, cost)
           ON CONFLICT (id, tenant_id) DO UPDATE SET request_count = sessions.request_count + excluded.request_count,
             total_cost_usd = sessions.total_cost_usd + excluded.total_cost_usd`,
          [
            list.map(([id]) => id),
            list.map(([, v]) => new Date(v.ts * 1000).toISOString()),
            list.map(([, v]) => [...v.modalities].sort().join(",")),
            list.map(([, v]) => v.n),
            list.map(([, v]) => v.cost.toFixed(10)),
          ],
        );
        rows += b.length;
        batches++;
      }
    }),
  );
  const elapsed = (performance.now() - started) / 1000;
  // Read before the pool ends: its backends exit with it.
  const pgCpu = backendCpuSpent(pg0, await backendCpu(url));
  await pool.end();
  return { rows, elapsed, batches, pgCpu };
}

/** One collector build under test: its own fresh database, its collector process, its sums. */
interface Setup {
  label: string;
  db: { url: string; drop: () => Promise<void> };
  collector: Awaited<ReturnType<typeof spawnCollector>> | null;
  baseRows: number;
  baseElapsed: number;
  baseBatches: number;
  /** CPU seconds of the database's Postgres backends: during the raw insert, during end to end. */
  basePgCpu: number;
  pgCpu: number;
  records: number;
  elapsed: number;
  failures: number;
  peakRss: number;
  cpu: number;
  latencies: number[];
}

async function setup(label: string, main: string | null): Promise<Setup> {
  const db = await createBenchDatabase(`ingest_${label}`);
  const s: Setup = { label, db, collector: null, baseRows: 0, baseElapsed: 0, baseBatches: 0, basePgCpu: 0, pgCpu: 0, records: 0, elapsed: 0, failures: 0, peakRss: 0, cpu: 0, latencies: [] };
  if (main === null) {
    // This tree's migrations (the collector migrates again at start, finding nothing to do).
    const database = await openDatabase({ url: db.url });
    await runMigrations(database);
    await database.close();
  }
  // A base build migrates its database with its own migrations when it starts.
  s.collector = await spawnCollector(db.url, main);
  return s;
}

async function round(s: Setup) {
  const pid = s.collector?.child.pid ?? 0;
  const b = await rawBaseline(s.db.url, BASELINE_SECONDS / ROUNDS);
  s.baseRows += b.rows;
  s.baseElapsed += b.elapsed;
  s.baseBatches += b.batches;
  s.basePgCpu += b.pgCpu;
  const cpuBefore = cpuSeconds(pid);
  const pg0 = await backendCpu(s.db.url);
  const e = await endToEnd(s.collector?.base ?? "", pid, SECONDS / ROUNDS);
  s.cpu += cpuSeconds(pid) - cpuBefore;
  s.pgCpu += backendCpuSpent(pg0, await backendCpu(s.db.url));
  s.records += e.records;
  s.elapsed += e.elapsed;
  s.failures += e.failures;
  s.peakRss = Math.max(s.peakRss, e.peakRss);
  s.latencies.push(...e.latencies);
}

function report(s: Setup): { ratio: number; lines: string[] } {
  const baseline = s.baseRows / s.baseElapsed;
  const latency = summarize(sketchOf(s.latencies));
  const rps = s.records / s.elapsed;
  const ratio = rps / baseline;
  const mb = (b: number) => `${(b / 1024 / 1024).toFixed(0)} MB`;
  const ms = (v: number | null | undefined) => (v == null ? "n/a" : `${v.toFixed(1)} ms`);
  return {
    ratio,
    lines: [
      `  [${s.label}] end to end (HTTP → validate → rate → one insert + sessions upsert, committed): ${rps.toFixed(0)} records/s`,
      `  [${s.label}] batch latency: p50 ${ms(latency?.p50)}, p99 ${ms(latency?.p99)}  (${s.latencies.length} batches, ${s.failures} failed)`,
      `  [${s.label}] collector CPU: ${((s.cpu * 1000) / Math.max(1, s.latencies.length)).toFixed(1)} ms per batch (${(s.cpu / s.elapsed).toFixed(2)} cores)`,
      `  [${s.label}] Postgres CPU: ${((s.pgCpu * 1000) / Math.max(1, s.latencies.length)).toFixed(1)} ms per batch end to end, ${((s.basePgCpu * 1000) / Math.max(1, s.baseBatches)).toFixed(1)} ms per ${BATCH}-row batch of the raw insert`,
      `  [${s.label}] collector peak RSS: ${mb(s.peakRss)}  (target < 300 MB)`,
      `  [${s.label}] baseline (raw INSERT … SELECT FROM unnest into requests + sessions upsert): ${baseline.toFixed(0)} rows/s`,
      `  [${s.label}] ratio end to end / baseline: ${ratio.toFixed(2)}  (target ≥ 0.5; and ≥ 20000 records/s)`,
    ],
  };
}

/**
 * With BENCH_BASE_DIST=<dir> (a tree holding dist/cli/main.js and its migrations/, built from another
 * commit), that build runs too, on its own database, its rounds interleaved with this build's: each
 * build's ratio is to the raw insert into its own schema, measured under the same background load.
 */
async function main() {
  if (RUNTIME === "dist") {
    process.stdout.write("building the server (npm run build:server) so the collector runs as `npm start` would…\n");
    execFileSync("npm", ["run", "--silent", "build:server"], { cwd: ROOT, stdio: "inherit" });
  }
  const baseDist = BASE_DIST;
  const setups: Setup[] = [];
  try {
    setups.push(await setup("this", null));
    if (baseDist) setups.push(await setup("base", join(baseDist, "dist", "cli", "main.js")));
    // Interleaved rounds: the baseline and the collector see the same background load (the machine
    // is shared), and the same table sizes.
    // The builds alternate which goes first: the same background load on average.
    for (let r = 0; r < ROUNDS; r++) for (const s of r % 2 === 1 ? [...setups].reverse() : setups) await round(s);
    const reports = setups.map(report);
    const ratios = setups.length === 2 ? [`  ratio of ratios this / base: ${((reports[0]?.ratio ?? 0) / (reports[1]?.ratio ?? 1)).toFixed(2)}`] : [];
    process.stdout.write(
      [
        `bench:ingest  ${new Date().toISOString()}  collector: ${RUNTIME === "dist" ? "node dist/cli/main.js serve" : "tsx src/cli/main.ts serve"}; ${CLIENTS} clients × ${BATCH}-record batches, ${SECONDS} s (baseline ${BASELINE_SECONDS} s), interleaved in ${ROUNDS} rounds${baseDist ? `; base build ${baseDist}` : ""}`,
        ...reports.flatMap((r) => r.lines),
        ...ratios,
        `  load: ${execFileSync("uptime").toString().trim()}`,
        "",
      ].join("\n"),
    );
  } finally {
    for (const s of setups) {
      const c = s.collector;
      if (c) {
        c.child.kill("SIGTERM");
        await new Promise((r) => c.child.once("exit", r));
        rmSync(c.cwd, { recursive: true, force: true });
      }
      await s.db.drop();
    }
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`bench:ingest failed: ${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
