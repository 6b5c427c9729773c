/**
 * bench:scale's gateway phase (bench/scale.ts, BENCH_SCALE=gateway|both): the same c=64 load of
 * chat-completions calls (JSON, recording on) spread round-robin over 1, 2 and 3 `voxgate serve`
 * processes on one Postgres database, the loopback stub vendor of bench:gateway upstream. Per step:
 * calls/s, CPU per call in each gateway process, in the database's Postgres backends (the recorder's
 * batched rows), in the stub and in this load generator.
 *
 * The three groups (1 + 2 + 3 processes, each on its own database) run side by side and are measured
 * in BENCH_ROUNDS interleaved rounds (the order reversed every other round), each ratio to the
 * 1-process group taken within a round: on a shared 2-core machine the speed drifts from minute to
 * minute, and the ingest phase's one pass (steps a minute apart) read that drift as scaling.
 */
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import autocannon from "autocannon";
import pg from "pg";
import { ADMIN_URL, backendCpu, backendCpuSpent, type BenchServer, cpuSecondsOf, createBenchDatabase, gatewayConfig, percentile, startGatewayStub, startServer } from "./support.js";

const CLIENTS = 64;
/** 5: with 3 rounds of 15 s at load 6-9 the paired calls/s ratios spread 0.66-2.57 (2026-11-28 16:39). */
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
/**
 * Calls each process serves before anything is measured (as bench:gateway's BENCH_WARMUP_CALLS): V8
 * optimizes the handler after some thousand calls, and a gateway's steady state is the figure.
 */
const WARMUP_CALLS = Number(process.env.BENCH_WARMUP_CALLS ?? 3000);
/**
 * Unmeasured load on a group just before each of its rounds: the other groups ran meanwhile, and its
 * idle Postgres connections may have closed (a backend new in the window would count its start).
 */
const REWARM_SECONDS = 1;
const KEY = "bench-scale-gw-key-0123456789abcdef";
const PROVIDER_KEY = "sk-bench-provider-key-0123456789";
const BODY = JSON.stringify({ model: "openai/gpt-4.1-mini", messages: [{ role: "user", content: "Say hello." }] });
/** Seconds every group sits idle, measured at once, after the warm-up: what a replica costs doing nothing. */
const IDLE_SECONDS = 5;
/** The recorder flushes every 200 ms: a round's last batch lands within this wait and is counted. */
const FLUSH_WAIT_MS = 600;
const r2 = (x: number) => Math.round(x * 100) / 100;
const median = (xs: number[]) => percentile([...xs].sort((a, b) => a - b), 0.5);

export interface GatewayStep {
  processes: number;
  round: number;
  calls: number;
  calls_per_s: number;
  gateway_cpu_us_per_call: number[];
  gateways_cpu_us_per_call: number;
  postgres_cpu_us_per_call: number;
  stub_cpu_us_per_call: number;
  generator_cpu_us_per_call: number;
  /**
   * Transactions committed in the step's database per second (pg_stat_database, which backends
   * update up to a second late: the window shifts, its length holds) and calls per commit.
   */
  postgres_commits_per_s: number;
  calls_per_commit: number;
  /** Cores busy over the round: gateways + Postgres + stub + this generator. */
  cores_used: number;
}

interface Group {
  n: number;
  url: string;
  drop: () => Promise<void>;
  servers: BenchServer[];
  /** Every call made to the group, warm-ups included (checked against the rows recorded). */
  called: number;
}

/**
 * The group's share of 64 connections (autocannon, as bench:gateway: ~4x less CPU per call than
 * undici's Pool in a probe, and the generator shares the 2 cores): connection i goes to process
 * i mod n, as a balancer spreads keep-alive clients, and each runs for `seconds` or, given `amount`,
 * until the group made that many calls. The calls made and the wall time.
 */
async function load(g: Group, run: { seconds: number } | { amount: number }): Promise<{ calls: number; elapsed: number }> {
  const t0 = performance.now();
  const results = await Promise.all(
    g.servers.map((s, i) => {
      const connections = Math.floor(CLIENTS / g.n) + (i < CLIENTS % g.n ? 1 : 0);
      const share = "amount" in run ? { amount: Math.ceil((run.amount * connections) / CLIENTS) } : { duration: run.seconds };
      return autocannon({ url: `${s.baseUrl}/openai/v1/chat/completions`, method: "POST", connections, ...share, headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json" }, body: BODY });
    }),
  );
  const elapsed = (performance.now() - t0) / 1000;
  for (const r of results) if (r.non2xx > 0 || r.errors > 0) throw new Error(`${g.n} process(es): ${r.non2xx} non-2xx, ${r.errors} errors`);
  const calls = results.reduce((a, r) => a + r.requests.total, 0);
  g.called += calls;
  return { calls, elapsed };
}

const wait = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function measure(g: Group, round: number, stubPid: number | undefined, seconds: number): Promise<GatewayStep> {
  await load(g, { seconds: REWARM_SECONDS });
  await wait(FLUSH_WAIT_MS);
  const cpu0 = g.servers.map((s) => cpuSecondsOf(s.child.pid));
  const stub0 = cpuSecondsOf(stubPid);
  const gen0 = process.cpuUsage();
  const db0 = await backendCpu(g.url);
  const commits0 = await commits(g.url);
  const { calls, elapsed } = await load(g, { seconds });
  const gen = process.cpuUsage(gen0);
  await wait(FLUSH_WAIT_MS);
  const cpu = g.servers.map((s, i) => cpuSecondsOf(s.child.pid) - (cpu0[i] ?? 0));
  const stubCpu = cpuSecondsOf(stubPid) - stub0;
  const pgCpu = backendCpuSpent(db0, await backendCpu(g.url));
  const committed = (await commits(g.url)) - commits0;
  // A tenth of a µs: a call costs ~100 µs in the gateway and ~20 µs in Postgres, whole µs would blur the ratios.
  const us = (sec: number) => Math.round((sec * 1e7) / calls) / 10;
  const total = cpu.reduce((a, c) => a + c, 0);
  const genCpu = (gen.user + gen.system) / 1e6;
  return {
    processes: g.n,
    round,
    calls,
    calls_per_s: Math.round(calls / elapsed),
    gateway_cpu_us_per_call: cpu.map(us),
    gateways_cpu_us_per_call: us(total),
    postgres_cpu_us_per_call: us(pgCpu),
    stub_cpu_us_per_call: us(stubCpu),
    generator_cpu_us_per_call: us(genCpu),
    postgres_commits_per_s: Math.round(committed / elapsed),
    calls_per_commit: Math.round(calls / committed),
    cores_used: Math.round(((total + pgCpu + stubCpu + genCpu) / elapsed) * 100) / 100,
  };
}

async function commits(url: string): Promise<number> {
  const admin = new pg.Client({ connectionString: ADMIN_URL });
  await admin.connect();
  try {
    const { rows } = await admin.query<{ n: string }>("SELECT xact_commit AS n FROM pg_stat_database WHERE datname = $1", [new URL(url).pathname.slice(1)]);
    return Number(rows[0]?.n ?? Number.NaN);
  } finally {
    await admin.end();
  }
}

async function countRows(url: string): Promise<number> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<{ n: number }>("SELECT count(*)::int AS n FROM requests")).rows[0]?.n ?? 0;
  } finally {
    await client.end();
  }
}

export interface GatewayScale {
  rounds: number;
  steps: GatewayStep[];
  /** Per group, idle: CPU ms per second in its gateway processes (all of them) and its Postgres backends. */
  idle: { processes: number; gateways_cpu_ms_per_s: number; postgres_cpu_ms_per_s: number }[];
  /** Per group: calls made (warm-ups included) and rows its database holds afterwards. */
  recorded: { processes: number; called: number; recorded: number }[];
}

/** Starts the stub and the three groups, warms them, runs the interleaved rounds (each round's lines printed as they end). */
export async function gatewayScale(entry: string[], seconds: number): Promise<GatewayScale> {
  const stub = await startGatewayStub();
  const dir = mkdtempSync(join(tmpdir(), "voxgate-bench-scale-gw-"));
  const configPath = join(dir, "voxgate.yaml");
  writeFileSync(configPath, gatewayConfig(`http://127.0.0.1:${stub.port}`, KEY, PROVIDER_KEY));
  const groups: Group[] = [];
  try {
    for (const n of [1, 2, 3]) {
      const db = await createBenchDatabase(`scalegw${n}`);
      const g: Group = { n, url: db.url, drop: db.drop, servers: [], called: 0 };
      groups.push(g);
      // OTel export off (empty = unset) whatever this shell has: the figure is the gateway's own.
      for (let i = 0; i < n; i++) g.servers.push(await startServer({ DATABASE_URL: db.url, VOXGATE_CONFIG: configPath, LOG_LEVEL: "warn", OTEL_EXPORTER_OTLP_ENDPOINT: "" }, entry));
    }
    for (const g of groups) await load(g, { amount: WARMUP_CALLS * g.n });
    await wait(FLUSH_WAIT_MS);
    const idle0 = await Promise.all(groups.map(async (g) => ({ gw: g.servers.map((s) => cpuSecondsOf(s.child.pid)), db: await backendCpu(g.url) })));
    await wait(IDLE_SECONDS * 1000);
    const idle = await Promise.all(
      groups.map(async (g, i) => {
        const before = idle0[i] as (typeof idle0)[number];
        const gw = g.servers.reduce((a, s, j) => a + cpuSecondsOf(s.child.pid) - (before.gw[j] ?? 0), 0);
        const db = backendCpuSpent(before.db, await backendCpu(g.url));
        return { processes: g.n, gateways_cpu_ms_per_s: r2((gw * 1000) / IDLE_SECONDS), postgres_cpu_ms_per_s: r2((db * 1000) / IDLE_SECONDS) };
      }),
    );
    const steps: GatewayStep[] = [];
    for (let r = 0; r < ROUNDS; r++) {
      for (const g of r % 2 === 0 ? groups : [...groups].reverse()) {
        steps.push(await measure(g, r + 1, stub.child.pid, seconds));
        process.stdout.write(`${JSON.stringify(steps.at(-1))}\n`);
      }
    }
    await wait(FLUSH_WAIT_MS);
    const recorded = [];
    for (const g of groups) recorded.push({ processes: g.n, called: g.called, recorded: await countRows(g.url) });
    return { rounds: ROUNDS, steps, idle, recorded };
  } finally {
    for (const g of groups) {
      await Promise.all(g.servers.map((s) => s.stop()));
      await g.drop();
    }
    stub.child.kill("SIGTERM");
  }
}

/**
 * Postgres CPU per second over every round, fitted as a·calls/s + b·processes (least squares): each
 * recorder commits its own batch every 200 ms, so a replica adds a per-transaction cost whatever its
 * rate, and a call its row's. a in µs per call, b in ms of Postgres CPU per second per busy replica.
 */
export function postgresFit(steps: GatewayStep[]): { us_per_call: number; ms_per_s_per_replica: number } {
  let rr = 0;
  let rn = 0;
  let nn = 0;
  let ry = 0;
  let ny = 0;
  for (const s of steps) {
    const y = s.postgres_cpu_us_per_call * s.calls_per_s; // µs of Postgres CPU per second
    rr += s.calls_per_s * s.calls_per_s;
    rn += s.calls_per_s * s.processes;
    nn += s.processes * s.processes;
    ry += s.calls_per_s * y;
    ny += s.processes * y;
  }
  const det = rr * nn - rn * rn;
  return { us_per_call: r2((ry * nn - rn * ny) / det), ms_per_s_per_replica: r2((rr * ny - rn * ry) / det / 1000) };
}

/**
 * Per group: its median round (by calls/s) and every round's calls/s; ratios to the 1-process group
 * taken round by round, then their median; calls/s per gateway core and Postgres ms per 1,000 calls
 * (µs per call read as ms per 1,000) from the median of the rounds.
 */
export function gatewaySummary(run: GatewayScale) {
  const byGroup = (n: number) => run.steps.filter((s) => s.processes === n);
  const base = byGroup(1);
  return [1, 2, 3].map((n) => {
    const mine = byGroup(n);
    const sorted = [...mine].sort((a, b) => a.calls_per_s - b.calls_per_s);
    const mid = sorted[Math.floor((sorted.length - 1) / 2)] as GatewayStep;
    const paired = (f: (s: GatewayStep, b: GatewayStep) => number) => {
      const rs = mine.flatMap((s) => {
        const b = base.find((x) => x.round === s.round);
        return b ? [f(s, b)] : [];
      });
      return { median: r2(median(rs)), rounds: rs.map(r2) };
    };
    return {
      processes: n,
      median_round: mid,
      calls_per_s_rounds: mine.map((s) => s.calls_per_s),
      calls_per_s_ratio: paired((s, b) => s.calls_per_s / b.calls_per_s),
      gateways_cpu_per_call_ratio: paired((s, b) => s.gateways_cpu_us_per_call / b.gateways_cpu_us_per_call),
      postgres_cpu_per_call_ratio: paired((s, b) => s.postgres_cpu_us_per_call / b.postgres_cpu_us_per_call),
      calls_per_s_per_gateway_core: Math.round(1e6 / median(mine.map((s) => s.gateways_cpu_us_per_call))),
      postgres_cpu_ms_per_1000_calls: median(mine.map((s) => s.postgres_cpu_us_per_call)),
      postgres_share_of_cpu: r2(median(mine.map((s) => s.postgres_cpu_us_per_call / (s.postgres_cpu_us_per_call + s.gateways_cpu_us_per_call)))),
      idle: run.idle.find((x) => x.processes === n),
      recorded: run.recorded.find((x) => x.processes === n),
    };
  });
}
