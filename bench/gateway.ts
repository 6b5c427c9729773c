/**
 * bench:gateway — the same loopback stub vendor (OpenAI chat completions) called three ways in one
 * run: direct, through Voxgate (`voxgate serve` on Postgres, recording on) and through Portkey's
 * open-source gateway (@portkey-ai/gateway, headless, routed with x-portkey-provider +
 * x-portkey-custom-host). Modes:
 *   - chat JSON at concurrency 1: added p50 / p99 latency over direct (rounds interleaved);
 *   - chat JSON at concurrency 64: requests/s (autocannon), and again with wrk when it is on PATH
 *     (optional: autocannon is a Node process sharing the 2 cores with the proxies, wrk a C one), in
 *     BENCH_C64_ROUNDS interleaved rounds with every ratio taken within a round;
 *   - SSE at concurrency 1: added time to first token (the floor relays the stream as Voxgate does).
 * Targets (docs/PERFORMANCE.md): added p50 ≤ 0.3 ms at c=1; ≥ 10× Portkey's throughput at c=64.
 * BENCH_API=responses (`npm run bench:gateway:responses`) runs the same modes on OpenAI's Responses
 * API (POST /v1/responses, SSE events up to response.completed) instead of chat completions.
 * BENCH_OTEL=1 (`npm run bench:gateway:otel`) adds a Voxgate exporting every call as a GenAI span
 * (OTEL_EXPORTER_OTLP_ENDPOINT set) to a loopback OTLP collector, beside the one without: the cost of
 * the export, as the ratio voxgate+otel / voxgate. Every Voxgate call carries a W3C traceparent.
 * A peer that fails a mode is reported as failed, not dropped.
 * Also in the same run: the floor (bench/gateway-floor.ts, a minimal undici proxy: what Node itself
 * costs here), and with BENCH_BASE_DIST=<dir> a second Voxgate built from another commit (A/B:
 * `git archive <commit> | tar -x -C <dir>`, link node_modules, `npx tsc -p tsconfig.build.json`).
 * BENCH_SERVER_NODE_ARGS: node flags for this tree's Voxgate (a `--cpu-prof` of the serving process).
 */
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import autocannon from "autocannon";
import { Pool } from "undici";
import { OtlpCollector } from "../test/support/stubs/otlp-collector.js";
import { backendCpu, backendCpuSpent, cliEntry, cpuTimes, createBenchDatabase, fmt, gatewayConfig, percentile, ROOT, spawnWithPort, startGatewayStub, startServer } from "./support.js";

/**
 * c=1 calls per peer, spread over ROUNDS rounds (5,000 a round by default). Each round switches the
 * processes at work on the 2 cores, and a round of 500 mostly measured the switch: direct's whole
 * round (~20 ms) ran in the previous peer's wake (p50 0.042-0.047 ms, against 0.103-0.104 in rounds of
 * 5,000) and Voxgate's p50 read 0.35-0.37 ms (0.31 in rounds of 5,000, as in a 10,000-call probe), so
 * "added" moved by up to 0.1 ms with the round length (docs/PERFORMANCE.md, 2026-11-24).
 */
const C1_REQUESTS = Number(process.env.BENCH_C1_REQUESTS ?? 20000);
/**
 * Sequential calls each peer serves before anything is measured. V8 optimizes a handler after some
 * thousand calls: with 200, the c=1 rounds measured the warm-up itself (every peer, the direct stub
 * included, 0.15-0.3 ms slower in round 1 than in round 4). A gateway serves millions of calls; the
 * target is its steady state.
 */
const WARMUP_CALLS = Number(process.env.BENCH_WARMUP_CALLS ?? 3000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 4);
const C64_SECONDS = Number(process.env.BENCH_C64_SECONDS ?? 4);
/**
 * c=64 runs in this many interleaved rounds (each peer once per round, the order reversed every other
 * round) and ratios are taken round by round: on a shared 2-core machine the speed drifts from minute
 * to minute, so peers measured in one round ran under the same conditions, and the median of the
 * paired ratios is steadier than one ratio of two runs a minute apart.
 */
const C64_ROUNDS = Number(process.env.BENCH_C64_ROUNDS ?? 3);
/**
 * SSE calls per peer (over ROUNDS rounds). With 300 (rounds of 75 calls, ~0.1 s each) one burst of
 * another process's work on the 2 shared cores moved a whole round: Voxgate's Responses TTFT read p50
 * 18.8 ms at load 20 (2026-11-28), its rounds 0.48 / 0.50 / 7.77 / 5.81 ms in a later run, while a
 * probe of 3,000 streams in windows of 75 never left 0.42-0.60 ms (the floor 0.33-0.50).
 */
const SSE_REQUESTS = Number(process.env.BENCH_SSE_REQUESTS ?? 2000);
/** wrk's threads (the c=64 connections are spread over them); BENCH_WRK=0 skips wrk even when installed. */
const WRK_THREADS = Number(process.env.BENCH_WRK_THREADS ?? 1);
const WRK = process.env.BENCH_WRK !== "0" && spawnSync("wrk", ["--version"]).error === undefined;
const KEY = "bench-gateway-key-0123456789abcdef";
const PROVIDER_KEY = "sk-bench-provider-key-0123456789";
/**
 * BENCH_MESSAGES=n (default 1): the chat history every call carries, n messages of ~500 bytes. A voice
 * agent's LLM call sends its whole conversation, tens of KB late in a call (60 messages ≈ 33 KB).
 */
const MESSAGES = Number(process.env.BENCH_MESSAGES ?? 1);
const history =
  MESSAGES <= 1
    ? [{ role: "user", content: "Say hello." }]
    : Array.from({ length: MESSAGES }, (_, i) => ({
        role: i % 2 === 0 ? "user" : "assistant",
        content: `Turn ${i}: ${"the caller asked about their order status and the agent explained the delivery window. ".repeat(6)}`,
      }));
/** Which OpenAI API the calls use: chat completions (default) or Responses (BENCH_API=responses). */
const RESPONSES = process.env.BENCH_API === "responses";
const API = RESPONSES ? "responses" : "chat";
/** The route below /v1 (the vendor's) or /openai/v1 (Voxgate's, the floor's). */
const ROUTE = RESPONSES ? "/responses" : "/chat/completions";
/** The first content delta of the stub's stream ("Hel"), as it appears on the wire. */
const FIRST_DELTA = RESPONSES ? '"delta":"H' : '"content":"H';
const BODY = JSON.stringify(RESPONSES ? { model: "openai/gpt-4.1-mini", input: history } : { model: "openai/gpt-4.1-mini", messages: history });
const SSE_BODY = JSON.stringify(RESPONSES ? { model: "openai/gpt-4.1-mini", stream: true, input: history } : { model: "openai/gpt-4.1-mini", stream: true, messages: history });

interface Target {
  name: string;
  /** The process serving it (its CPU per call is measured at c=64). */
  pid?: number | undefined;
  /** The Postgres database it records into: its backends' CPU per call is measured too. */
  dbUrl?: string | undefined;
  origin: string;
  path: string;
  headers: Record<string, string>;
}

async function startPortkey(): Promise<{ child: ChildProcess; port: number }> {
  const port = 30000 + Math.floor(Math.random() * 20000);
  const child = spawn(process.execPath, [join(ROOT, "node_modules/@portkey-ai/gateway/build/start-server.js"), `--port=${port}`, "--headless"], {
    cwd: ROOT,
    stdio: ["ignore", "ignore", "ignore"],
  });
  for (let i = 0; i < 300; i++) {
    try {
      await fetch(`http://127.0.0.1:${port}/`);
      return { child, port };
    } catch {
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  throw new Error("portkey did not start");
}

const BASE_DIST = process.env.BENCH_BASE_DIST;
/** BENCH_SERVER_NODE_ARGS (e.g. "--cpu-prof --cpu-prof-dir=/tmp/gw-prof"): node flags for this tree's `voxgate serve` only. */
const SERVER_NODE_ARGS = (process.env.BENCH_SERVER_NODE_ARGS ?? "").split(" ").filter(Boolean);
const OTEL = process.env.BENCH_OTEL === "1";
/** The agent's trace context every Voxgate call carries (read only by the exporting peer). */
const TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

/** Sequential calls on one keep-alive connection; per-call wall time in ms. */
async function sequential(t: Target, body: string, n: number, untilFirstToken: boolean): Promise<number[]> {
  const pool = new Pool(t.origin, { connections: 1, pipelining: 1 });
  const times: number[] = [];
  try {
    for (let i = 0; i < n; i++) {
      const t0 = performance.now();
      const res = await pool.request({ method: "POST", path: t.path, headers: { "content-type": "application/json", ...t.headers }, body });
      if (res.statusCode !== 200) throw new Error(`${t.name}: status ${res.statusCode}: ${(await res.body.text()).slice(0, 200)}`);
      if (untilFirstToken) {
        let seen = false;
        for await (const chunk of res.body) {
          if (!seen && String(chunk).includes(FIRST_DELTA)) {
            times.push(performance.now() - t0);
            seen = true;
          }
        }
        if (!seen) throw new Error(`${t.name}: no content delta in the stream`);
      } else {
        await res.body.dump();
        times.push(performance.now() - t0);
      }
    }
  } finally {
    await pool.close();
  }
  return times;
}

/** CPU seconds (user + system) a process has used so far; NaN off Linux. */
function cpuSeconds(pid: number | undefined): number {
  const t = cpuTimes(pid);
  return t.user + t.system;
}

interface Throughput {
  rps: number;
  cpuMsPerCall: number;
  /** The load generator's own CPU per call (ms): autocannon runs in this process, wrk in its own. */
  genCpuMsPerCall: number;
  /** Postgres backends' CPU per call (ms), for a target that records into Postgres. */
  dbCpuMsPerCall: number | null;
  /** The stub vendor's CPU per call (ms): it shares the 2 cores with every peer. */
  stubCpuMsPerCall: number;
}

/** The stub's pid, set once it is spawned: its CPU per call is reported beside each peer's. */
let stubPid: number | undefined;

type ServingCpu = Pick<Throughput, "cpuMsPerCall" | "dbCpuMsPerCall" | "stubCpuMsPerCall">;

/**
 * Starts counting the CPU of a peer's serving process, its Postgres backends and the stub; the
 * returned function waits for the recorder's next flush (every 200 ms) and divides by the calls made.
 */
async function servingCpu(t: Target): Promise<(calls: number) => Promise<ServingCpu>> {
  const cpu0 = cpuSeconds(t.pid);
  const stub0 = cpuSeconds(stubPid);
  const db0 = await backendCpu(t.dbUrl);
  return async (calls) => {
    await new Promise((res) => setTimeout(res, 600));
    return {
      cpuMsPerCall: ((cpuSeconds(t.pid) - cpu0) * 1000) / calls,
      dbCpuMsPerCall: t.dbUrl ? (backendCpuSpent(db0, await backendCpu(t.dbUrl)) * 1000) / calls : null,
      stubCpuMsPerCall: ((cpuSeconds(stubPid) - stub0) * 1000) / calls,
    };
  };
}

/** Requests/s at c=64, and the CPU the serving process (and its Postgres) spent per call (ms; records written after the run included). */
async function throughput(t: Target, seconds = C64_SECONDS): Promise<Throughput> {
  const serving = await servingCpu(t);
  const gen0 = process.cpuUsage();
  const r = await autocannon({
    url: t.origin + t.path,
    method: "POST",
    connections: 64,
    duration: seconds,
    headers: { "content-type": "application/json", ...t.headers },
    body: BODY,
  });
  const gen = process.cpuUsage(gen0);
  if (r.non2xx > 0 || r.errors > 0) throw new Error(`${t.name}: ${r.non2xx} non-2xx, ${r.errors} errors at c=64`);
  const genCpuMsPerCall = (gen.user + gen.system) / 1000 / r.requests.total;
  return { rps: r.requests.average, genCpuMsPerCall, ...(await serving(r.requests.total)) };
}

/** wrk's request (POST, body, headers) as its Lua script; values are JSON strings, which are valid Lua strings here (ASCII, no escapes but \"). */
function wrkScript(dir: string, t: Target): string {
  const headers = { "content-type": "application/json", ...t.headers };
  const lines = ['wrk.method = "POST"', `wrk.body = ${JSON.stringify(BODY)}`];
  for (const [k, v] of Object.entries(headers)) lines.push(`wrk.headers[${JSON.stringify(k)}] = ${JSON.stringify(v)}`);
  const path = join(dir, `wrk-${t.name.replace(/[^a-z0-9]/gi, "_")}.lua`);
  writeFileSync(path, `${lines.join("\n")}\n`);
  return path;
}

/**
 * The c=64 measure with wrk instead of autocannon: same connections and duration, the same CPU per
 * call of the serving process (and its Postgres), plus wrk's own CPU (its children's times as seen
 * by the shell that waited for it). Any non-2xx answer or socket error fails the peer.
 */
async function wrkThroughput(t: Target, script: string, seconds = C64_SECONDS): Promise<Throughput> {
  const serving = await servingCpu(t);
  const args = ["-c", "wrk \"$@\"; s=$?; cat /proc/$$/stat; exit $s", "sh", `-t${WRK_THREADS}`, "-c64", `-d${seconds}s`, "--timeout", "10s", "-s", script, t.origin + t.path];
  const out = await new Promise<string>((resolve, reject) => {
    const child = spawn("sh", args, { stdio: ["ignore", "pipe", "inherit"] });
    let text = "";
    child.stdout.on("data", (c: Buffer) => {
      text += c.toString();
    });
    child.once("error", reject);
    child.once("exit", (code) => (code === 0 ? resolve(text) : reject(new Error(`${t.name}: wrk exited ${code}: ${text.slice(0, 300)}`))));
  });
  const total = Number(/(\d+) requests in/.exec(out)?.[1] ?? Number.NaN);
  const rps = Number(/Requests\/sec:\s*([\d.]+)/.exec(out)?.[1] ?? Number.NaN);
  const non2xx = /Non-2xx or 3xx responses: (\d+)/.exec(out)?.[1];
  const sockErr = /Socket errors: (.*)/.exec(out)?.[1];
  if (non2xx || sockErr || !Number.isFinite(total) || total === 0) throw new Error(`${t.name}: wrk: ${non2xx ?? 0} non-2xx, socket errors: ${sockErr ?? "none"}, ${total} requests`);
  // The shell's /proc stat after wrk exited: cutime + cstime (fields 16, 17) are wrk's CPU.
  const statLine = out.trim().split("\n").pop() ?? "";
  const f = statLine.split(") ")[1]?.split(" ") ?? [];
  const genCpuMsPerCall = ((Number(f[13]) + Number(f[14])) * 10) / total;
  return { rps, genCpuMsPerCall, ...(await serving(total)) };
}

/** The element whose key is the median (the lower middle one of an even count). */
function medianBy<T>(xs: T[], key: (x: T) => number): T {
  const sorted = [...xs].sort((a, b) => key(a) - key(b));
  return sorted[Math.floor((sorted.length - 1) / 2)] as T;
}

type Outcome<T> = { ok: true; value: T } | { ok: false; error: string };
async function attempt<T>(f: () => Promise<T>): Promise<Outcome<T>> {
  try {
    return { ok: true, value: await f() };
  } catch (err) {
    return { ok: false, error: (err as Error).message };
  }
}

async function main() {
  const stub = await startGatewayStub();
  const stubOrigin = `http://127.0.0.1:${stub.port}`;
  stubPid = stub.child.pid;
  const dir = mkdtempSync(join(tmpdir(), "voxgate-bench-gw-"));
  const configPath = join(dir, "voxgate.yaml");
  writeFileSync(configPath, gatewayConfig(stubOrigin, KEY, PROVIDER_KEY));
  const db = await createBenchDatabase("gateway");
  // The OTel variables are cleared for every peer but the exporting one (empty = unset).
  const voxgate = await startServer({ DATABASE_URL: db.url, VOXGATE_CONFIG: configPath, LOG_LEVEL: "warn", OTEL_EXPORTER_OTLP_ENDPOINT: "" }, [...SERVER_NODE_ARGS, ...cliEntry()]);
  const collector = OTEL ? await new OtlpCollector({ decode: false }).start() : null;
  const otelDb = collector ? await createBenchDatabase("gateway_otel") : null;
  const otel = collector && otelDb ? await startServer({ DATABASE_URL: otelDb.url, VOXGATE_CONFIG: configPath, LOG_LEVEL: "warn", OTEL_EXPORTER_OTLP_ENDPOINT: collector.url }) : null;
  const baseDb = BASE_DIST ? await createBenchDatabase("gateway_base") : null;
  const base = BASE_DIST && baseDb ? await startServer({ DATABASE_URL: baseDb.url, VOXGATE_CONFIG: configPath, LOG_LEVEL: "warn", OTEL_EXPORTER_OTLP_ENDPOINT: "" }, [join(BASE_DIST, "dist/cli/main.js")]) : null;
  const floor = await spawnWithPort(["--import", "tsx", join(ROOT, "bench/gateway-floor.ts"), stubOrigin, PROVIDER_KEY]);
  const portkey = await attempt(startPortkey);

  const direct: Target = { name: "direct", pid: stub.child.pid, origin: stubOrigin, path: `/v1${ROUTE}`, headers: { authorization: `Bearer ${PROVIDER_KEY}` } };
  const through: Target = { name: "voxgate", pid: voxgate.child.pid, dbUrl: db.url, origin: voxgate.baseUrl, path: `/openai/v1${ROUTE}`, headers: { authorization: `Bearer ${KEY}`, traceparent: TRACEPARENT } };
  const peer: Target | null = portkey.ok
    ? {
        name: "portkey",
        pid: portkey.value.child.pid,
        origin: `http://127.0.0.1:${portkey.value.port}`,
        path: `/v1${ROUTE}`,
        headers: { authorization: `Bearer ${PROVIDER_KEY}`, "x-portkey-provider": "openai", "x-portkey-custom-host": `${stubOrigin}/v1` },
      }
    : null;
  const floorTarget: Target = { name: "floor", pid: floor.child.pid, origin: `http://127.0.0.1:${floor.port}`, path: `/openai/v1${ROUTE}`, headers: {} };
  const baseTarget: Target | null = base ? { name: "voxgate@base", pid: base.child.pid, dbUrl: baseDb?.url, origin: base.baseUrl, path: through.path, headers: through.headers } : null;
  const otelTarget: Target | null = otel ? { name: "voxgate+otel", pid: otel.child.pid, dbUrl: otelDb?.url, origin: otel.baseUrl, path: through.path, headers: through.headers } : null;
  const all = [direct, floorTarget, through, ...(otelTarget ? [otelTarget] : []), ...(baseTarget ? [baseTarget] : []), ...(peer ? [peer] : [])];
  const others = all.filter((t) => t !== direct).map((t) => t.name);

  try {
    // Warm-up: connections, JIT, the routing table.
    for (const t of all) await attempt(() => sequential(t, BODY, WARMUP_CALLS, false));

    const c1: Record<string, number[]> = Object.fromEntries(all.map((t) => [t.name, []]));
    const c1Errors: Record<string, string> = {};
    // Every other round runs the peers in reverse order: an A/A run (BENCH_BASE_DIST = the same build)
    // showed the peer measured second ~0.03 ms faster at c=1 in a fixed order (hence 4 rounds by default).
    const roundOrder = <T>(xs: T[], r: number) => (r % 2 === 0 ? xs : [...xs].reverse());
    for (let r = 0; r < ROUNDS; r++) {
      for (const t of roundOrder(all, r)) {
        const o = await attempt(() => sequential(t, BODY, Math.ceil(C1_REQUESTS / ROUNDS), false));
        if (o.ok) c1[t.name]?.push(...o.value);
        else c1Errors[t.name] = o.error;
      }
    }
    const sse: Record<string, number[]> = Object.fromEntries(all.map((t) => [t.name, []]));
    const sseRounds: Record<string, number[]> = Object.fromEntries(all.map((t) => [t.name, []]));
    const sseErrors: Record<string, string> = {};
    // Streams take their own path through each peer (the SSE relay and meter): warmed apart. The floor
    // relays each chunk as it comes, as Voxgate does: what streaming through a Node proxy costs here.
    for (const t of all) await attempt(() => sequential(t, SSE_BODY, WARMUP_CALLS, true));
    for (let r = 0; r < ROUNDS; r++) {
      for (const t of roundOrder(all, r)) {
        const o = await attempt(() => sequential(t, SSE_BODY, Math.ceil(SSE_REQUESTS / ROUNDS), true));
        if (o.ok) {
          sse[t.name]?.push(...o.value);
          sseRounds[t.name]?.push(percentile([...o.value].sort((a, b) => a - b), 0.5));
        } else sseErrors[t.name] = o.error;
      }
    }
    // Each peer gets a c=64 warm-up first (64 upstream connections opened, JIT warm), then the rounds.
    const rounds = async (measure: (t: Target, seconds: number) => Promise<Throughput>) => {
      // A peer's rounds, until one fails: then its error is its outcome.
      const out: Record<string, Outcome<Throughput[]>> = Object.fromEntries(all.map((t) => [t.name, { ok: true, value: [] }]));
      for (const t of all) await attempt(() => measure(t, 2));
      for (let r = 0; r < C64_ROUNDS; r++) {
        for (const t of roundOrder(all, r)) {
          const sofar = out[t.name];
          if (!sofar?.ok) continue;
          const o = await attempt(() => measure(t, C64_SECONDS));
          if (o.ok) sofar.value.push(o.value);
          else out[t.name] = o;
        }
      }
      return out;
    };
    const rps = await rounds(throughput);
    // The same with wrk (optional), after all autocannon rounds.
    const scripts = new Map(all.map((t) => [t.name, wrkScript(dir, t)]));
    const wrkRps = WRK ? await rounds((t, seconds) => wrkThroughput(t, scripts.get(t.name) ?? "", seconds)) : {};

    const stats = (xs: number[]) => {
      const s = [...xs].sort((a, b) => a - b);
      return { p50: percentile(s, 0.5), p99: percentile(s, 0.99) };
    };
    const d = stats(c1.direct ?? []);
    const dSse = stats(sse.direct ?? []);
    console.log(`bench:gateway — ${new Date().toISOString()}, load ${(await import("node:os")).loadavg().map((l) => l.toFixed(2)).join(" ")}; request body ${BODY.length} bytes (${MESSAGES} message${MESSAGES === 1 ? "" : "s"})`);
    console.log(`${API} JSON c=1 (${C1_REQUESTS} calls, ${ROUNDS} interleaved rounds): direct p50 ${d.p50.toFixed(3)} ms, p99 ${d.p99.toFixed(3)} ms`);
    for (const name of [...others, ...(peer ? [] : ["portkey"])]) {
      if (c1Errors[name] || !(c1[name]?.length ?? 0)) {
        console.log(`  ${name}: FAILED ${c1Errors[name] ?? "not started"}`);
        continue;
      }
      const s = stats(c1[name] ?? []);
      console.log(`  ${name}: p50 ${s.p50.toFixed(3)} ms (added ${(s.p50 - d.p50).toFixed(3)} ms), p99 ${s.p99.toFixed(3)} ms (added ${(s.p99 - d.p99).toFixed(3)} ms)`);
    }
    // Voxgate's own work per call: its added p50 over the floor's (the floor is a bare undici proxy).
    if (c1.floor?.length) {
      const f = stats(c1.floor).p50;
      for (const name of ["voxgate", "voxgate@base"].filter((n) => c1[n]?.length)) {
        console.log(`  ${name} over the floor: p50 +${(stats(c1[name] ?? []).p50 - f).toFixed(3)} ms (target ≤ 0.05 ms)`);
      }
    }
    const roundsOf = (name: string) => (sseRounds[name] ?? []).map((x) => x.toFixed(3)).join(" / ");
    console.log(`SSE c=1 time to first token (${SSE_REQUESTS} calls, ${ROUNDS} interleaved rounds): direct p50 ${dSse.p50.toFixed(3)} ms (rounds ${roundsOf("direct")})`);
    const floorSse = sse.floor?.length ? stats(sse.floor) : null;
    for (const name of [...others, ...(peer ? [] : ["portkey"])]) {
      if (sseErrors[name] || !(sse[name]?.length ?? 0)) {
        console.log(`  ${name}: FAILED ${sseErrors[name] ?? "not started"}`);
        continue;
      }
      const s = stats(sse[name] ?? []);
      const overFloor = floorSse && name !== "floor" ? `, ${(s.p50 - floorSse.p50).toFixed(3)} ms over the floor's` : "";
      console.log(`  ${name}: TTFT p50 ${s.p50.toFixed(3)} ms (added ${(s.p50 - dSse.p50).toFixed(3)} ms${overFloor}; rounds ${roundsOf(name)}), p99 ${s.p99.toFixed(3)} ms`);
    }
    const report = (label: string, results: Record<string, Outcome<Throughput[]>>) => {
      console.log(`${API} JSON c=64 (${C64_ROUNDS} interleaved rounds of ${C64_SECONDS} s, ${label}; each peer's median round):`);
      for (const t of all) {
        const o = results[t.name];
        if (!o?.ok) {
          console.log(`  ${t.name}: FAILED ${o?.error ?? "not measured"}`);
          continue;
        }
        const v = medianBy(o.value, (x) => x.rps);
        const range = o.value.length > 1 ? ` (rounds ${o.value.map((x) => fmt(x.rps, 0)).join(" / ")})` : "";
        const db = v.dbCpuMsPerCall !== null ? ` + ${v.dbCpuMsPerCall.toFixed(3)} ms in Postgres (the records)` : "";
        console.log(`  ${t.name}: ${fmt(v.rps, 0)} req/s${range}, ${v.cpuMsPerCall.toFixed(3)} ms CPU per call in its process${db}; ${label} ${v.genCpuMsPerCall.toFixed(3)} ms, stub ${v.stubCpuMsPerCall.toFixed(3)} ms`);
      }
      // Ratios round by round (the two peers of a pair ran in the same round), then their median.
      const ratio = (a: string, b: string) => {
        const x = results[a];
        const y = results[b];
        if (!x?.ok || !y?.ok) return null;
        const total = (v: Throughput) => v.cpuMsPerCall + (v.dbCpuMsPerCall ?? 0);
        const pairs = x.value.map((xv, i) => [xv, y.value[i]] as const).filter((p): p is readonly [Throughput, Throughput] => p[1] !== undefined);
        const med = (f: (xv: Throughput, yv: Throughput) => number) => {
          const rs = pairs.map(([xv, yv]) => f(xv, yv));
          return { median: percentile([...rs].sort((m, n) => m - n), 0.5), all: rs };
        };
        const byRps = med((xv, yv) => xv.rps / yv.rps);
        const byCpu = med((xv, yv) => yv.cpuMsPerCall / xv.cpuMsPerCall);
        const withDb = x.value[0]?.dbCpuMsPerCall !== null ? `, ${med((xv, yv) => total(yv) / total(xv)).median.toFixed(2)}× counting Postgres` : "";
        const spread = byRps.all.length > 1 ? ` (rounds ${byRps.all.map((r) => r.toFixed(2)).join(" / ")})` : "";
        return `${a} / ${b}: ${byRps.median.toFixed(2)}× req/s${spread}, ${byCpu.median.toFixed(2)}× by CPU per call${withDb}`;
      };
      for (const [a, b, note] of [
        ["voxgate", "floor", " (target ≥ 0.80× req/s, CPU per call ≤ 1.25× the floor's: by CPU ≥ 0.80×)"],
        ["voxgate@base", "floor", ""],
        ["voxgate", "portkey", ""],
        ["floor", "portkey", ""],
        ["voxgate", "voxgate@base", ""],
        ["voxgate+otel", "voxgate", " (span export on / off)"],
      ] as const) {
        const line = ratio(a, b);
        if (line) console.log(`  ${line}${note}`);
      }
    };
    report("autocannon", rps);
    if (WRK) report(`wrk -t${WRK_THREADS}`, wrkRps);
    else console.log(`${API} JSON c=64 with wrk: skipped (wrk not on PATH, or BENCH_WRK=0)`);
    const vs = stats(c1.voxgate ?? []);
    console.log(`  added p50 at c=1: ${(vs.p50 - d.p50).toFixed(3)} ms (target ≤ 0.3 ms); the floor adds ${(stats(c1.floor ?? []).p50 - d.p50).toFixed(3)} ms`);
  } finally {
    await voxgate.stop();
    await base?.stop();
    await baseDb?.drop();
    await otel?.stop();
    await otelDb?.drop();
    if (collector) console.log(`  (the loopback collector received ${collector.received} span exports)`);
    await collector?.close();
    floor.child.kill("SIGTERM");
    if (portkey.ok) portkey.value.child.kill("SIGTERM");
    stub.child.kill("SIGTERM");
    await db.drop();
  }
}

await main();
