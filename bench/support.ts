import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { type AddressInfo, createServer } from "node:net";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import pg from "pg";

export const ROOT = fileURLToPath(new URL("..", import.meta.url));
export const ADMIN_URL = process.env.TEST_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test";

/** A fresh Postgres database for one benchmark run; dropped by the returned function. */
export async function createBenchDatabase(tag: string): Promise<{ url: string; drop: () => Promise<void> }> {
  const name = `voxgate_bench_${tag}_${process.pid}`;
  const admin = new pg.Client({ connectionString: ADMIN_URL });
  await admin.connect();
  await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = new URL(ADMIN_URL);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    async drop() {
      const a = new pg.Client({ connectionString: ADMIN_URL });
      await a.connect();
      await a.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await a.end();
    },
  };
}

/** The production entry point (dist/, built by npm ci); benchmarks measure what users run. */
export function cliEntry(): string[] {
  const dist = `${ROOT}dist/cli/main.js`;
  if (!existsSync(dist)) throw new Error("dist/ is missing: run `npm run build` first");
  return [dist];
}

export interface BenchServer {
  child: ChildProcess;
  baseUrl: string;
  /** ms from spawn to the first healthy /health answer. */
  startupMs: number;
  rssBytes(): number;
  stop(): Promise<void>;
}

/** Spawns `voxgate serve` on a free port and waits until /health answers (`entry`: another build's CLI, for A/B runs). */
export async function startServer(env: Record<string, string | undefined>, entry: string[] = cliEntry()): Promise<BenchServer> {
  const port = await freePort();
  const t0 = performance.now();
  const child = spawn(process.execPath, [...entry, "serve", "--port", String(port), "--host", "127.0.0.1"], {
    cwd: ROOT,
    env: { ...process.env, LOG_LEVEL: "warn", ...env },
    stdio: ["ignore", "ignore", "inherit"],
  });
  const baseUrl = `http://127.0.0.1:${port}`;
  for (;;) {
    if (child.exitCode !== null) throw new Error("server exited during startup");
    try {
      if ((await fetch(`${baseUrl}/health`)).ok) break;
    } catch {}
    await new Promise((r) => setTimeout(r, 10));
  }
  const startupMs = performance.now() - t0;
  return {
    child,
    baseUrl,
    startupMs,
    rssBytes: () => rssOf(child.pid),
    stop: () =>
      new Promise((resolve) => {
        child.once("exit", () => resolve());
        child.kill("SIGTERM");
      }),
  };
}

/** Spawns `node <args>`, a helper process that prints its port as its first stdout line (the loopback stubs, the floors). */
export async function spawnWithPort(args: string[], env: Record<string, string> = {}): Promise<{ child: ChildProcess; port: number }> {
  const child = spawn(process.execPath, args, { cwd: ROOT, env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "inherit"] });
  const rl = createInterface({ input: child.stdout as NodeJS.ReadableStream });
  const port = await new Promise<number>((resolve, reject) => {
    rl.once("line", (l) => resolve(Number(l)));
    child.once("exit", () => reject(new Error(`${args.join(" ")} exited`)));
  });
  return { child, port };
}

/** The gateway benches' loopback vendor (bench/gateway-stub.ts: OpenAI chat completions and Responses) in its own process. */
export function startGatewayStub(): Promise<{ child: ChildProcess; port: number }> {
  return spawnWithPort(["--import", "tsx", `${ROOT}bench/gateway-stub.ts`]);
}

/** The voxgate.yaml of the gateway benches: one API key, `openai/gpt-4.1-mini` routed to the stub, no workers. */
export function gatewayConfig(stubOrigin: string, apiKey: string, providerKey: string): string {
  return `auth:\n  api_keys: [${apiKey}]\nproviders:\n  openai: { api_key: "${providerKey}", base_url: "${stubOrigin}/v1" }\nmodels:\n  llm:\n    openai/gpt-4.1-mini: { provider: openai, model: gpt-4.1-mini }\nworkers: { enabled: false }\n`;
}

/**
 * A port nothing listens on now (the kernel's choice, released at once). A random pick collided with
 * the other builds' servers on this shared machine ("server exited during startup": EADDRINUSE).
 */
export async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, "127.0.0.1", resolve));
  const { port } = probe.address() as AddressInfo;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return port;
}

/** Resident set size of a process, from /proc (Linux). */
export function rssOf(pid: number | undefined): number {
  if (!pid) return 0;
  try {
    const status = readFileSync(`/proc/${pid}/status`, "utf8");
    const m = /VmRSS:\s+(\d+) kB/.exec(status);
    return m?.[1] ? Number(m[1]) * 1024 : 0;
  } catch {
    return 0;
  }
}

/** CPU seconds a process has used so far (user, system), from /proc (Linux); NaN elsewhere. */
export function cpuTimes(pid: number | undefined): { user: number; system: number } {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]?.split(" ") ?? [];
    return { user: Number(fields[11]) / 100, system: Number(fields[12]) / 100 }; // utime, stime in USER_HZ (100)
  } catch {
    return { user: Number.NaN, system: Number.NaN };
  }
}

/** CPU seconds (user + system) a process has used so far. */
export function cpuSecondsOf(pid: number | undefined): number {
  const t = cpuTimes(pid);
  return t.user + t.system;
}

/**
 * CPU seconds the Postgres backends serving a database have used so far, by pid: on 2 shared cores
 * the records' writes compete with the proxy itself, so they belong in its cost. Empty without a db.
 */
export async function backendCpu(dbUrl: string | undefined): Promise<Map<number, number>> {
  const out = new Map<number, number>();
  if (!dbUrl) return out;
  const admin = new pg.Client({ connectionString: ADMIN_URL });
  await admin.connect();
  try {
    const { rows } = await admin.query<{ pid: number }>("SELECT pid FROM pg_stat_activity WHERE datname = $1", [new URL(dbUrl).pathname.slice(1)]);
    for (const r of rows) out.set(r.pid, cpuSecondsOf(r.pid));
  } finally {
    await admin.end();
  }
  return out;
}

/** CPU seconds the backends used between two readings (a backend new since the first counts whole). */
export function backendCpuSpent(before: Map<number, number>, after: Map<number, number>): number {
  let total = 0;
  for (const [pid, cpu] of after) if (Number.isFinite(cpu)) total += cpu - (before.get(pid) ?? 0);
  return total;
}

export const fmt = (n: number, digits = 1) => n.toLocaleString("en-US", { maximumFractionDigits: digits });

/** Nearest-rank percentile of an ascending array (the collector's own definition, docs/api). */
export function percentile(sorted: number[], q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))] ?? Number.NaN;
}

/** p50/p95 of `n` sequential runs of `fn` (ms). */
export async function timeIt(n: number, fn: () => Promise<void>): Promise<{ p50: number; p95: number }> {
  const times: number[] = [];
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    await fn();
    times.push(performance.now() - t0);
  }
  times.sort((a, b) => a - b);
  return { p50: percentile(times, 0.5), p95: percentile(times, 0.95) };
}
