/**
 * bench:scale: the same ingest load (4 clients posting 500-record batches for BENCH_SECONDS, default
 * 15) spread round-robin over 1, 2 and 3 collector processes (`voxgate serve`) on one Postgres
 * database. Per step: records/s, CPU per record in each collector and in the database's Postgres
 * backends. The 1-collector step is the same-run baseline of the ratios. On a 2-core machine more
 * processes cannot add throughput; the figures say what a record costs where, so what more cores buy.
 * Then the same for the gateway (bench/scale-gateway.ts): 64 concurrent chat-completions calls in all,
 * spread round-robin over 1, 2 and 3 `voxgate serve` processes recording into one database, the
 * bench:gateway stub vendor upstream; calls/s and CPU per call in each process, in Postgres, in the
 * stub and in the load generator (this process), the three groups measured in interleaved rounds.
 *
 *   npm run bench:scale   (env: BENCH_SCALE=ingest|gateway|both, default both; BENCH_SECONDS=15 per
 *   step (a gateway step: per group and round); BENCH_ROUNDS=5 gateway rounds; BENCH_WARMUP_CALLS=3000
 *   per gateway process; TEST_DATABASE_URL as the other benches; runs dist/ or BENCH_RUNTIME=tsx)
 */
import { randomUUID } from "node:crypto";
import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { Pool } from "undici";
import { gatewayScale, gatewaySummary, postgresFit } from "./scale-gateway.js";
import { backendCpu, backendCpuSpent, type BenchServer, cliEntry, cpuSecondsOf, createBenchDatabase, startServer } from "./support.js";

const SECONDS = Number(process.env.BENCH_SECONDS ?? 15);
const SCALE = process.env.BENCH_SCALE ?? "both";
if (!["ingest", "gateway", "both"].includes(SCALE)) throw new Error(`BENCH_SCALE=${SCALE}: expected ingest, gateway or both`);
const CLIENTS = 4;
const BATCH = 500;
const KEY = "bench-scale-key-0123456789abcdef";
const entry = process.env.BENCH_RUNTIME === "tsx" ? ["--import", import.meta.resolve("tsx"), fileURLToPath(new URL("../src/cli/main.ts", import.meta.url))] : cliEntry();

function batchBody(): string {
  const session = `bench-${randomUUID()}`;
  return JSON.stringify(
    Array.from({ length: BATCH }, (_, i) => ({
      id: randomUUID(),
      timestamp: Date.now() / 1000,
      modality: "llm",
      model_id: "openai/gpt-4.1-mini",
      project: "bench",
      session_id: session,
      agent_id: `agent-${i % 20}`,
      ttfb_ms: 120 + (i % 50),
      total_latency_ms: 400 + (i % 200),
      cost_usd: 0.000123,
      input_tokens: 350,
      output_tokens: 60,
    })),
  );
}

interface Step {
  collectors: number;
  records_per_s: number;
  collector_cpu_us_per_record: number[];
  collectors_cpu_us_per_record: number;
  postgres_cpu_us_per_record: number;
  cores_used: number;
}

async function step(url: string, n: number): Promise<Step> {
  const servers: BenchServer[] = [];
  for (let i = 0; i < n; i++) servers.push(await startServer({ DATABASE_URL: url, VOXGATE_API_KEY: KEY, LOG_LEVEL: "warn" }, entry));
  const pools = servers.map((s) => new Pool(s.baseUrl, { connections: CLIENTS }));
  try {
    // Warm-up: every collector prepares its statements and fills its caches.
    await Promise.all(pools.map((p) => post(p)));
    const cpu0 = servers.map((s) => cpuSecondsOf(s.child.pid));
    const db0 = await backendCpu(url);
    let records = 0;
    let next = 0;
    const t0 = performance.now();
    const until = t0 + SECONDS * 1000;
    await Promise.all(
      Array.from({ length: CLIENTS }, async () => {
        while (performance.now() < until) {
          const pool = pools[next++ % pools.length] as Pool;
          await post(pool);
          records += BATCH;
        }
      }),
    );
    const elapsed = (performance.now() - t0) / 1000;
    const cpu = servers.map((s, i) => cpuSecondsOf(s.child.pid) - (cpu0[i] ?? 0));
    const pgCpu = backendCpuSpent(db0, await backendCpu(url));
    const us = (sec: number) => Math.round((sec * 1e6) / records);
    const total = cpu.reduce((a, c) => a + c, 0);
    return {
      collectors: n,
      records_per_s: Math.round(records / elapsed),
      collector_cpu_us_per_record: cpu.map(us),
      collectors_cpu_us_per_record: us(total),
      postgres_cpu_us_per_record: us(pgCpu),
      cores_used: Math.round(((total + pgCpu) / elapsed) * 100) / 100,
    };
  } finally {
    await Promise.all(pools.map((p) => p.close()));
    await Promise.all(servers.map((s) => s.stop()));
  }
}

async function post(pool: Pool): Promise<void> {
  const res = await pool.request({ path: "/v1/ingest", method: "POST", headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json" }, body: batchBody() });
  const text = await res.body.text();
  if (res.statusCode !== 200) throw new Error(`ingest answered ${res.statusCode}: ${text.slice(0, 200)}`);
}

async function ingest() {
  const steps: Step[] = [];
  for (const n of [1, 2, 3]) {
    const bench = await createBenchDatabase(`scale${n}`);
    try {
      steps.push(await step(bench.url, n));
    } finally {
      await bench.drop();
    }
    process.stdout.write(`${JSON.stringify(steps.at(-1))}\n`);
  }
  const base = steps[0] as Step;
  const load = execFileSync("uptime").toString().trim();
  process.stdout.write(
    `${JSON.stringify(
      {
        seconds: SECONDS,
        load,
        steps: steps.map((s) => ({
          ...s,
          records_per_s_ratio: Math.round((s.records_per_s / base.records_per_s) * 100) / 100,
          postgres_share_of_cpu: Math.round((s.postgres_cpu_us_per_record / (s.postgres_cpu_us_per_record + s.collectors_cpu_us_per_record)) * 100) / 100,
        })),
      },
      null,
      2,
    )}\n`,
  );
}

async function gateway() {
  const loadBefore = execFileSync("uptime").toString().trim();
  const run = await gatewayScale(entry, SECONDS);
  const load = execFileSync("uptime").toString().trim();
  process.stdout.write(`${JSON.stringify({ phase: "gateway", seconds: SECONDS, rounds: run.rounds, load_before: loadBefore, load, groups: gatewaySummary(run), postgres_fit: postgresFit(run.steps) }, null, 2)}\n`);
}

if (SCALE !== "gateway") await ingest();
if (SCALE !== "ingest") await gateway();
