/**
 * bench:startup — time from spawning `voxgate serve` to a healthy /health, on PGlite (fresh and
 * existing data directory) and on Postgres, plus idle RSS. Baseline in the same run: a bare
 * `node -e` HTTP server answering /health (the floor any Node service pays), started in every round
 * next to the servers measured, each ratio taken within its round and the median reported.
 * Targets (docs/PERFORMANCE.md): under 6 × the bare server and under 120 MB idle (Postgres).
 *
 * With BENCH_BASE_DIST=<dir> (another commit, built: `git archive <commit> | tar -x -C <dir>`, link
 * node_modules, `npm run build:server`: since the server bundle, tsc alone would measure the unbundled
 * build) a second Voxgate from <dir>/dist/cli/main.js is
 * started in the same rounds (A/B in one run, the order switched every other round), on its own
 * database and data directory. On 2 shared cores the bare server's time alone moves ×3 between runs
 * minutes apart: a change of ~50 ms shows only against a peer measured in the same rounds. Each
 * start's CPU (user + system of the server process, read from /proc when /health first answers) is
 * reported beside its wall time: on the loaded machine it moves far less than the wall time, so the
 * CPU ratios (to the bare server's CPU, and this ÷ base) are the figures to compare across runs.
 *
 *   npm run bench:startup   (env: BENCH_RUNS=5, BENCH_BASE_DIST=<dir>, BENCH_PGLITE=0 to skip PGlite)
 */
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { cliEntry, cpuSecondsOf, createBenchDatabase, fmt, freePort, startServer } from "./support.js";

const RUNS = Number(process.env.BENCH_RUNS ?? 5);
const BASE_DIST = process.env.BENCH_BASE_DIST;
const PGLITE = process.env.BENCH_PGLITE !== "0";
/** How long a started server idles before its RSS is read. */
const IDLE_MS = 1500;

interface Peer {
  name: string;
  entry: string[];
}

const PEERS: Peer[] = [{ name: "this build", entry: cliEntry() }, ...(BASE_DIST ? [{ name: "base build", entry: [join(BASE_DIST, "dist/cli/main.js")] }] : [])];

async function bareNode(): Promise<{ ms: number; cpuMs: number }> {
  const port = await freePort();
  const t0 = performance.now();
  const child = spawn(process.execPath, ["-e", `require("node:http").createServer((q,s)=>s.end("ok")).listen(${port},"127.0.0.1")`]);
  for (;;) {
    try {
      if ((await fetch(`http://127.0.0.1:${port}/health`)).ok) break;
    } catch {}
    await new Promise((r) => setTimeout(r, 10));
  }
  const ms = performance.now() - t0;
  const cpuMs = cpuSecondsOf(child.pid) * 1000;
  await new Promise<void>((resolve) => {
    child.once("exit", () => resolve());
    child.kill();
  });
  return { ms, cpuMs };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? Number.NaN;

/** One server start: ms (wall and CPU) to a healthy /health and the RSS after IDLE_MS. */
async function start(peer: Peer, env: Record<string, string | undefined>): Promise<{ ms: number; cpuMs: number; rss: number }> {
  const s = await startServer(env, peer.entry);
  const cpuMs = cpuSecondsOf(s.child.pid) * 1000;
  await new Promise((r) => setTimeout(r, IDLE_MS));
  const rss = s.rssBytes();
  await s.stop();
  return { ms: s.startupMs, cpuMs, rss };
}

/**
 * `runs` rounds, each: the bare server, then every peer (reversed every other round); per peer the
 * median start time, the median of its ratios to the same round's bare server, the largest idle RSS
 * and, with a base build, the median of this build ÷ the base build's time within each round.
 */
async function measure(label: string, runs: number, env: (peer: Peer, peerIndex: number, round: number) => Record<string, string | undefined>): Promise<void> {
  const bare: number[] = [];
  const bareCpu: number[] = [];
  const rows = PEERS.map(() => ({ ms: [] as number[], ratio: [] as number[], cpu: [] as number[], cpuRatio: [] as number[], rss: 0 }));
  const ab: number[] = [];
  const abCpu: number[] = [];
  for (let round = 0; round < runs; round++) {
    const { ms: b, cpuMs: bc } = await bareNode();
    bare.push(b);
    bareCpu.push(bc);
    const order = PEERS.map((_, i) => i);
    if (round % 2 === 1) order.reverse();
    const ms: number[] = [];
    const cpu: number[] = [];
    for (const i of order) {
      const peer = PEERS[i] as Peer;
      const r = await start(peer, env(peer, i, round));
      const row = rows[i] as (typeof rows)[number];
      row.ms.push(r.ms);
      row.ratio.push(r.ms / b);
      row.cpu.push(r.cpuMs);
      row.cpuRatio.push(r.cpuMs / bc);
      row.rss = Math.max(row.rss, r.rss);
      ms[i] = r.ms;
      cpu[i] = r.cpuMs;
    }
    if (PEERS.length > 1) {
      ab.push((ms[0] as number) / (ms[1] as number));
      abCpu.push((cpu[0] as number) / (cpu[1] as number));
    }
  }
  console.log(
    `  ${label}  (bare node ${fmt(median(bare), 0)} ms median, rounds ${bare.map((x) => fmt(x, 0)).join(" / ")}; CPU ${fmt(median(bareCpu), 0)} ms median)`,
  );
  PEERS.forEach((peer, i) => {
    const row = rows[i] as (typeof rows)[number];
    console.log(
      `    ${peer.name.padEnd(11)} ${fmt(median(row.ms), 0).padStart(6)} ms median of ${runs} = ${fmt(median(row.ratio), 1)} × bare node (rounds ${row.ratio.map((x) => fmt(x, 1)).join(" / ")})  idle RSS ≤ ${fmt(row.rss / 1048576, 0)} MB`,
    );
    console.log(
      `    ${"".padEnd(11)} CPU ${fmt(median(row.cpu), 0)} ms median = ${fmt(median(row.cpuRatio), 1)} × bare node's CPU (rounds ${row.cpuRatio.map((x) => fmt(x, 1)).join(" / ")})`,
    );
  });
  if (ab.length > 0) {
    console.log(`    this ÷ base ${fmt(median(ab), 2)} × (rounds ${ab.map((x) => fmt(x, 2)).join(" / ")})`);
    console.log(`    this ÷ base, CPU ${fmt(median(abCpu), 2)} × (rounds ${abCpu.map((x) => fmt(x, 2)).join(" / ")})`);
  }
}

async function main() {
  console.log(`bench:startup  spawn → healthy /health   (targets < 6 × bare node, < 120 MB idle on Postgres)`);
  const home = mkdtempSync(join(tmpdir(), "vg-bench-startup-"));
  const dbs = await Promise.all(PEERS.map((_, i) => createBenchDatabase(`startup${i}`)));
  try {
    await measure("Postgres", RUNS, (_peer, i) => ({ HOME: home, DATABASE_URL: dbs[i]?.url }));
    if (PGLITE) {
      // A new data directory per start; the "existing" measure reuses each peer's first (its own schema).
      const dir = (peer: number, round: number) => ({ HOME: home, DATABASE_URL: undefined, VOXGATE_DB_PATH: join(home, `pglite-${peer}-${round}`) });
      await measure("PGlite, new data dir", Math.min(RUNS, 3), (_peer, i, round) => dir(i, round));
      await measure("PGlite, existing data dir", RUNS, (_peer, i) => dir(i, 0));
    }
  } finally {
    await Promise.all(dbs.map((d) => d.drop()));
    rmSync(home, { recursive: true, force: true });
  }
}

await main();
