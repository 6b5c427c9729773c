/**
 * bench:gateway-ws — WebSocket STT relay: the same loopback Deepgram stub (its own process) streamed
 * to directly, through a bare `ws` relay (bench/gateway-ws-floor.ts, the floor: what Node and `ws`
 * cost on this machine) and through Voxgate (`voxgate serve` on Postgres, recording on), in one run;
 * with BENCH_BASE_DIST=<dir> also through a second Voxgate built from another commit (A/B: `git
 * worktree add --detach <dir> <commit>`, link node_modules, `npx tsc -p tsconfig.build.json`).
 *   - added ms per frame: each stream sends 100 ms linear16 frames one at a time and waits for the
 *     frame's `Results` (round trip per frame); p50/p99 through a relay minus direct, rounds
 *     interleaved (every other round in reverse order).
 *   - CPU per frame of each serving process (utime + stime from /proc, summed over its streams:
 *     upgrade and close included), and the stub's beside it. User time is the relay's own work;
 *     system time is mostly the loopback socket syscalls, which swing with the machine's load.
 *   - unit accuracy: each Voxgate stream ends with CloseStream; the audio_seconds recorded for it
 *     (its rows summed) against the stub's truth (the bytes it received, as its Metadata.duration).
 * BENCH_RELAY_NODE_ARGS: node flags for the relays (Voxgate, its base, the floor), space-separated,
 * e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof" (each writes its profile there on exit).
 *   - governance (gateway.streams): RSS of BENCH_IDLE_STREAMS (300) idle streams held open, over the
 *     process's idle RSS, through Voxgate and through the floor; and how long revoking a vk_ key takes
 *     to close BENCH_REVOKE_STREAMS (100) of its open streams (1008 `key revoked`), beside the same
 *     streams closed by their clients (the same-run baseline).
 * The calls' project has a `block` budget far above the run's spend: every work frame passes the
 * stream's budget hook, and every 15 s of audio (every response) claims its next increment.
 * BENCH_MODE=realtime: the same rows for an OpenAI realtime conversation session (GET
 * /openai/v1/realtime?model=openai/gpt-realtime): each frame is an `input_audio_buffer.append` of
 * 100 ms pcm16 at 24 kHz (base64 text), answered by the stub with one small server event; no unit
 * accuracy (a session records per response) and no governance rows (the same registry as STT).
 * Targets: relay ≤ 0.2 ms per frame at p50, Voxgate's own ≤ 0.02 ms over the floor (a realtime session
 * ≤ 0.1 ms); 300 idle streams ≤ 40 MB of RSS; revocation closes 100 streams within 5 s.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import pg from "pg";
import { WebSocket } from "ws";
import { type BenchServer, cliEntry, cpuTimes, createBenchDatabase, percentile, ROOT, startServer } from "./support.js";

const FRAMES = Number(process.env.BENCH_FRAMES ?? 12_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 4);
const STREAMS_PER_ROUND = Number(process.env.BENCH_STREAMS ?? 2);
const BASE_DIST = process.env.BENCH_BASE_DIST;
const RELAY_NODE_ARGS = (process.env.BENCH_RELAY_NODE_ARGS ?? "").split(" ").filter(Boolean);
const KEY = "bench-gateway-ws-key-0123456789abcdef";
const PROVIDER_KEY = "dg-bench-provider-key-0123456789";
const REALTIME = process.env.BENCH_MODE === "realtime";
const QUERY = REALTIME ? "model=gpt-realtime" : "model=nova-3&encoding=linear16&sample_rate=16000&channels=1";
const VOX_QUERY = REALTIME ? "model=openai/gpt-realtime" : QUERY;
const FRAME: Buffer | string = REALTIME
  ? JSON.stringify({ type: "input_audio_buffer.append", audio: Buffer.alloc(4800, 7).toString("base64") }) // 100 ms of 24 kHz pcm16
  : Buffer.alloc(3200, 7); // 100 ms of 16 kHz mono linear16
/** The stub's answer to one frame. */
const ANSWER = REALTIME ? '{"type":"input_audio_buffer.speech_started"' : '{"type":"Results"';
const IDLE_STREAMS = Number(process.env.BENCH_IDLE_STREAMS ?? 300);
const REVOKE_STREAMS = Number(process.env.BENCH_REVOKE_STREAMS ?? 100);

async function spawnWithPort(cmd: string[]): Promise<{ child: ChildProcess; port: number }> {
  const child = spawn(process.execPath, cmd, { cwd: ROOT, stdio: ["ignore", "pipe", "inherit"] });
  const rl = createInterface({ input: child.stdout as NodeJS.ReadableStream });
  const port = await new Promise<number>((resolve, reject) => {
    rl.once("line", (l) => resolve(Number(l)));
    child.once("exit", () => reject(new Error(`${cmd.join(" ")} exited`)));
  });
  return { child, port };
}

interface StreamResult {
  rtts: number[];
  requestId: string | null;
  /** Seconds of audio sent (the stub's truth: it times the bytes it received). */
  sentSeconds: number;
  metadataDuration: number | null;
}

/** One stream: `frames` frames, each sent after the previous one's Results arrived. */
function stream(url: string, headers: Record<string, string>, frames: number): Promise<StreamResult> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { headers, perMessageDeflate: false });
    const rtts: number[] = [];
    let requestId: string | null = null;
    let metadataDuration: number | null = null;
    let sentAt = 0;
    let sent = 0;
    const sendNext = () => {
      if (sent === frames) {
        if (REALTIME) ws.close(1000);
        else ws.send(JSON.stringify({ type: "CloseStream" }));
        return;
      }
      sent++;
      sentAt = performance.now();
      ws.send(FRAME);
    };
    ws.on("upgrade", (res) => {
      const id = res.headers["x-voxgate-request-id"];
      requestId = typeof id === "string" ? id : null;
    });
    ws.on("open", sendNext);
    ws.on("message", (data) => {
      const text = data.toString();
      if (text.startsWith(ANSWER)) {
        rtts.push(performance.now() - sentAt);
        sendNext();
      } else if (text.includes('"Metadata"')) metadataDuration = (JSON.parse(text) as { duration: number }).duration;
    });
    ws.on("close", () => resolve({ rtts, requestId, sentSeconds: REALTIME ? 0 : (frames * FRAME.length) / 32_000, metadataDuration }));
    ws.on("unexpected-response", (_req, res) => reject(new Error(`upgrade refused: ${res.statusCode} ${String(res.headers["x-voxgate-error"])}`)));
    ws.on("error", reject);
  });
}

const stats = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return { p50: percentile(s, 0.5), p99: percentile(s, 0.99), n: s.length };
};

interface Target {
  name: string;
  url: string;
  headers: Record<string, string>;
  /** The process serving the client's socket (the stub itself for direct). */
  pid: number | undefined;
  /** The database a Voxgate records into: its streams' audio_seconds are checked against the stub. */
  dbUrl: string | null;
}

interface Tally {
  rtts: number[];
  /**
   * CPU seconds of the serving process (user: its JavaScript, ws and V8; system: the socket syscalls,
   * which vary with the machine's load), and of the stub, during this target's streams.
   */
  user: number;
  system: number;
  stubCpu: number;
  frames: number;
  accuracy: Array<{ recorded: number; truth: number }>;
}

async function recordedSeconds(dbUrl: string, requestId: string): Promise<number> {
  const c = new pg.Client({ connectionString: dbUrl });
  await c.connect();
  try {
    for (let i = 0; i < 100; i++) {
      const r = await c.query<{ s: number | null; final: boolean }>(
        `SELECT sum(audio_seconds)::float8 AS s, bool_or(id::text = $1) AS final FROM requests WHERE id::text = $1 OR metadata->>'stream_id' = $1`,
        [requestId],
      );
      const row = r.rows[0];
      if (row?.final) return row.s ?? 0;
      await new Promise((res) => setTimeout(res, 100));
    }
    throw new Error(`no record for ${requestId}`);
  } finally {
    await c.end();
  }
}

/** Resident set of a process in bytes (VmRSS). */
function rssBytes(pid: number | undefined): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  return Number(m?.[1] ?? Number.NaN) * 1024;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Opens `n` streams (20 handshakes in flight at a time) and resolves with the open sockets. */
async function openStreams(url: string, headers: Record<string, string>, n: number): Promise<WebSocket[]> {
  const out: WebSocket[] = [];
  for (let i = 0; i < n; i += 20) {
    const batch = Array.from(
      { length: Math.min(20, n - i) },
      () =>
        new Promise<WebSocket>((resolve, reject) => {
          const ws = new WebSocket(url, { headers, perMessageDeflate: false });
          ws.once("open", () => resolve(ws));
          ws.once("unexpected-response", (_q, res) => reject(new Error(`upgrade refused: ${res.statusCode} ${String(res.headers["x-voxgate-error"])}`)));
          ws.once("error", reject);
        }),
    );
    out.push(...(await Promise.all(batch)));
  }
  return out;
}

const closedAll = (sockets: WebSocket[]) => Promise.all(sockets.map((ws) => new Promise<number>((r) => (ws.readyState === ws.CLOSED ? r(0) : ws.once("close", (code) => r(code))))));

/** RSS samples of a process, 100 ms apart over `ms`. */
async function rssSamples(pid: number | undefined, ms: number): Promise<number[]> {
  const out: number[] = [];
  for (let t = 0; t < ms; t += 100) {
    out.push(rssBytes(pid));
    await sleep(100);
  }
  return out;
}

/**
 * Extra RSS of a relay process while `n` idle streams are open through it: the highest sample with
 * them open less the lowest before (a garbage collection between two single samples can make the
 * difference negative; this way it is an upper bound).
 */
async function idleStreamsRss(t: Target, n: number): Promise<number> {
  const before = Math.min(...(await rssSamples(t.pid, 2_000)));
  const sockets = await openStreams(t.url, t.headers, n);
  const after = Math.max(...(await rssSamples(t.pid, 2_000)));
  for (const ws of sockets) ws.close(1000);
  await closedAll(sockets);
  return after - before;
}

/** Seconds from revoking a vk_ key to the last of its `n` open streams closed, and the close codes seen. */
async function revocationSeconds(server: BenchServer, path: string, n: number): Promise<{ revoke: number; clientClose: number; codes: Set<number> }> {
  const api = (method: string, p: string, body?: unknown) =>
    fetch(`${server.baseUrl}${p}`, { method, headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json" }, body: body === undefined ? undefined : JSON.stringify(body) });
  const minted = (await (await api("POST", "/v1/api-keys", { name: "bench-revoke", scopes: ["infer"] })).json()) as { plaintext: string; id: string };
  const url = `${server.baseUrl.replace("http://", "ws://")}${path}`;
  const headers = { authorization: `Token ${minted.plaintext}` };
  // Baseline: the same number of streams, closed by their clients.
  const own = await openStreams(url, headers, n);
  const c0 = performance.now();
  for (const ws of own) ws.close(1000);
  await closedAll(own);
  const clientClose = (performance.now() - c0) / 1000;
  const sockets = await openStreams(url, headers, n);
  const t0 = performance.now();
  const res = await api("DELETE", `/v1/api-keys/${minted.id}`);
  if (res.status !== 204) throw new Error(`revoke answered ${res.status}`);
  const codes = new Set(await closedAll(sockets));
  return { revoke: (performance.now() - t0) / 1000, clientClose, codes };
}

async function main() {
  const stub = await spawnWithPort(["--import", "tsx", join(ROOT, "bench/gateway-ws-stub.ts")]);
  const stubOrigin = `127.0.0.1:${stub.port}`;
  const dir = mkdtempSync(join(tmpdir(), "voxgate-bench-gw-ws-"));
  const configPath = join(dir, "voxgate.yaml");
  writeFileSync(
    configPath,
    `auth:\n  api_keys: [${KEY}]\nproviders:\n  deepgram: { api_key: "${PROVIDER_KEY}", base_url: "http://${stubOrigin}/v1" }\n  openai: { api_key: "${PROVIDER_KEY}", base_url: "http://${stubOrigin}/v1" }\nmodels:\n  stt:\n    deepgram/nova-3: { provider: deepgram, model: nova-3 }\n${REALTIME ? `  llm:\n    openai/gpt-realtime: { provider: openai, model: gpt-realtime }\n` : ""}projects:\n  default: { daily_budget: 1000, budget_action: block }\nworkers: { enabled: false }\ngateway: { streams: { max_per_key: ${IDLE_STREAMS + REVOKE_STREAMS} } }\n`,
  );
  const env = { VOXGATE_CONFIG: configPath, LOG_LEVEL: "warn" };
  const db = await createBenchDatabase("gateway_ws");
  const baseDb = BASE_DIST ? await createBenchDatabase("gateway_ws_base") : null;
  const servers: BenchServer[] = [];
  const floor = await spawnWithPort([...RELAY_NODE_ARGS, "--import", "tsx", join(ROOT, "bench/gateway-ws-floor.ts"), `ws://${stubOrigin}`, PROVIDER_KEY]);
  const wsOrigin = (s: BenchServer) => s.baseUrl.replace("http://", "ws://");
  const through = REALTIME
    ? { headers: { authorization: `Bearer ${KEY}` }, path: `/openai/v1/realtime?${VOX_QUERY}` }
    : { headers: { authorization: `Token ${KEY}` }, path: `/deepgram/v1/listen?${QUERY}` };
  const loadBefore = loadavg();
  try {
    const voxgate = await startServer({ ...env, DATABASE_URL: db.url }, [...RELAY_NODE_ARGS, ...cliEntry()]);
    servers.push(voxgate);
    const base = BASE_DIST && baseDb ? await startServer({ ...env, DATABASE_URL: baseDb.url }, [...RELAY_NODE_ARGS, join(BASE_DIST, "dist/cli/main.js")]) : null;
    if (base) servers.push(base);
    const all: Target[] = [
      { name: "direct", url: `ws://${stubOrigin}/v1/${REALTIME ? "realtime" : "listen"}?${QUERY}`, headers: { authorization: `Token ${PROVIDER_KEY}` }, pid: stub.child.pid, dbUrl: null },
      { name: "floor", url: `ws://127.0.0.1:${floor.port}${through.path}`, headers: through.headers, pid: floor.child.pid, dbUrl: null },
      { name: "voxgate", url: `${wsOrigin(voxgate)}${through.path}`, headers: through.headers, pid: voxgate.child.pid, dbUrl: db.url },
      ...(base && baseDb ? [{ name: "voxgate@base", url: `${wsOrigin(base)}${through.path}`, headers: through.headers, pid: base.child.pid, dbUrl: baseDb.url }] : []),
    ];
    // Warm-up: JIT, connections, the routing table.
    for (const t of all) await stream(t.url, t.headers, 500);

    const tally = new Map<string, Tally>(all.map((t) => [t.name, { rtts: [], user: 0, system: 0, stubCpu: 0, frames: 0, accuracy: [] }]));
    const perStream = Math.ceil(FRAMES / (ROUNDS * STREAMS_PER_ROUND));
    // Every other round runs the targets in reverse order (the one measured second tends to gain).
    const roundOrder = (r: number) => (r % 2 === 0 ? all : [...all].reverse());
    for (let r = 0; r < ROUNDS; r++) {
      for (const t of roundOrder(r)) {
        const x = tally.get(t.name) as Tally;
        for (let s = 0; s < STREAMS_PER_ROUND; s++) {
          const cpu0 = cpuTimes(t.pid);
          const stub0 = cpuTimes(stub.child.pid);
          const v = await stream(t.url, t.headers, perStream);
          const cpu1 = cpuTimes(t.pid);
          const stub1 = cpuTimes(stub.child.pid);
          x.user += cpu1.user - cpu0.user;
          x.system += cpu1.system - cpu0.system;
          x.stubCpu += stub1.user + stub1.system - stub0.user - stub0.system;
          x.frames += v.rtts.length;
          x.rtts.push(...v.rtts);
          if (!t.dbUrl || REALTIME) continue;
          if (!v.requestId) throw new Error(`${t.name}: no X-Voxgate-Request-Id on the upgrade`);
          x.accuracy.push({ recorded: await recordedSeconds(t.dbUrl, v.requestId), truth: v.metadataDuration ?? v.sentSeconds });
        }
      }
    }

    const d = stats(tally.get("direct")?.rtts ?? []);
    const us = (seconds: number, frames: number) => ((seconds * 1e6) / frames).toFixed(1);
    console.log(`bench:gateway-ws — ${new Date().toISOString()}, load before ${loadBefore.map((l) => l.toFixed(2)).join(" ")}, after ${loadavg().map((l) => l.toFixed(2)).join(" ")}`);
    console.log(`${REALTIME ? "OpenAI realtime session relay (input_audio_buffer.append of 100 ms pcm16 24 kHz)" : "Deepgram live relay"}, ${perStream * ROUNDS * STREAMS_PER_ROUND} frames of 100 ms ${REALTIME ? "pcm16" : "linear16"} per target, one in flight per stream, ${ROUNDS} interleaved rounds of ${STREAMS_PER_ROUND} streams:`);
    const added: Record<string, { p50: number; cpuUs: number; userUs: number }> = {};
    for (const t of all) {
      const x = tally.get(t.name) as Tally;
      const s = stats(x.rtts);
      const cpuUs = ((x.user + x.system) * 1e6) / x.frames;
      const userUs = (x.user * 1e6) / x.frames;
      added[t.name] = { p50: s.p50 - d.p50, cpuUs, userUs };
      const plus = t.name === "direct" ? "" : ` (added p50 ${(s.p50 - d.p50).toFixed(3)} ms, p99 ${(s.p99 - d.p99).toFixed(3)} ms)`;
      const who = t.name === "direct" ? "the stub" : "its process";
      console.log(`  ${t.name}: p50 ${s.p50.toFixed(3)} ms, p99 ${s.p99.toFixed(3)} ms per frame${plus}; CPU ${cpuUs.toFixed(1)} µs per frame in ${who} (user ${userUs.toFixed(1)}, system ${us(x.system, x.frames)}), stub ${us(x.stubCpu, x.frames)} µs`);
      if (x.accuracy.length === 0) continue;
      const worst = Math.max(...x.accuracy.map((a) => Math.abs(a.recorded - a.truth) / a.truth));
      const recorded = x.accuracy.reduce((a, y) => a + y.recorded, 0);
      const truth = x.accuracy.reduce((a, y) => a + y.truth, 0);
      console.log(`    unit accuracy: ${x.accuracy.length} streams, recorded ${recorded.toFixed(3)} s vs stub truth ${truth.toFixed(3)} s; worst stream error ${(worst * 100).toFixed(4)} %`);
    }
    const v = added.voxgate;
    const f = added.floor;
    if (v && f) {
      console.log(`  voxgate added p50 ${v.p50.toFixed(3)} ms (target ≤ 0.2 ms); the floor adds ${f.p50.toFixed(3)} ms: Voxgate's own ${(v.p50 - f.p50).toFixed(3)} ms (target ≤ ${REALTIME ? "0.1" : "0.02"} ms), ${(v.cpuUs - f.cpuUs).toFixed(1)} µs CPU per frame over the floor's (user ${(v.userUs - f.userUs).toFixed(1)} µs)`);
    }
    const b = added["voxgate@base"];
    if (v && b) console.log(`  voxgate vs voxgate@base: added p50 ${(v.p50 - b.p50).toFixed(3)} ms, CPU ${(v.cpuUs - b.cpuUs).toFixed(1)} µs per frame (user ${(v.userUs - b.userUs).toFixed(1)} µs)`);

    if (REALTIME) return;
    const mb = (bytes: number) => (bytes / 1024 / 1024).toFixed(1);
    const floorTarget = all.find((t) => t.name === "floor") as Target;
    const voxTarget = all.find((t) => t.name === "voxgate") as Target;
    const floorRss = await idleStreamsRss(floorTarget, IDLE_STREAMS);
    const voxRss = await idleStreamsRss(voxTarget, IDLE_STREAMS);
    console.log(
      `  ${IDLE_STREAMS} idle streams: voxgate at most +${mb(voxRss)} MB RSS (target ≤ 40 MB), the floor at most +${mb(floorRss)} MB in the same run (${(voxRss / floorRss).toFixed(2)} × the floor)`,
    );
    const r = await revocationSeconds(voxgate, through.path, REVOKE_STREAMS);
    console.log(
      `  revocation: ${REVOKE_STREAMS} open streams of a revoked vk_ key closed in ${r.revoke.toFixed(2)} s (target ≤ 5 s; close codes ${[...r.codes].join(", ")}); the same streams closed by their clients took ${r.clientClose.toFixed(2)} s`,
    );
  } finally {
    for (const s of servers) await s.stop();
    floor.child.kill("SIGTERM");
    stub.child.kill("SIGTERM");
    await db.drop();
    await baseDb?.drop();
  }
}

await main();
