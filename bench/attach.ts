/**
 * bench:attach: the cost attach() adds to each AgentSession event. A recorded three-turn call (23
 * events: state changes, metrics, an error) is replayed REPEAT times per session (a 30-turn call),
 * then the session closes; CALLS sessions per round, each a fresh emitter. The time per event is
 * compared with the same replay on a bare listener baseline (one no-op listener per event name) in
 * the same run, so the harness's own cost (building the events, emit) cancels out. attach() pushes
 * through voxgate/client to a loopback collector stand-in (answers 202, counts rows): the figure
 * includes building the rows and the client's batching, JSON and HTTP. Rounds alternate.
 *
 *   npm run bench:attach   (env: BENCH_CALLS=400, BENCH_REPEAT=10, BENCH_ROUNDS=5)
 */
import { EventEmitter } from "node:events";
import { spawn } from "node:child_process";
import { loadavg } from "node:os";
import { attach, closeAttachClients } from "../src/livekit/index.js";
import { play, threeTurnCall } from "../test/livekit/sequences.js";

const CALLS = Number(process.env.BENCH_CALLS ?? 400);
const REPEAT = Number(process.env.BENCH_REPEAT ?? 10);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const EVENTS = ["user_state_changed", "agent_state_changed", "metrics_collected", "error", "close"];

// The collector stand-in runs in its own process, so its work is not counted as attach()'s.
const COLLECTOR = `
const { createServer } = require("node:http");
let rows = 0, posts = 0;
const srv = createServer((req, res) => {
  if (req.method === "GET") return res.end(JSON.stringify({ rows, posts }));
  let body = "";
  req.on("data", (c) => (body += c));
  req.on("end", () => {
    posts++;
    try { const p = JSON.parse(body); if (Array.isArray(p)) rows += p.length; } catch {}
    res.writeHead(202, { "content-type": "application/json" }).end('{"accepted":0}');
  });
});
srv.listen(0, "127.0.0.1", () => console.log(srv.address().port));
`;
const child = spawn(process.execPath, ["-e", COLLECTOR], { stdio: ["ignore", "pipe", "inherit"] });
const port = await new Promise<number>((resolve) => child.stdout.once("data", (d: Buffer) => resolve(Number(d.toString().trim()))));
const url = `http://127.0.0.1:${port}`;

const recorded = threeTurnCall("gateway.invalid:8080");
const call = recorded.filter(([name]) => name !== "close");
const close = recorded.filter(([name]) => name === "close");
const eventsPerSession = call.length * REPEAT + close.length;
const yieldNow = () => new Promise((r) => setImmediate(r));

async function run(kind: "bare" | "attach" | "listeners"): Promise<number> {
  let sink = 0;
  const start = process.hrtime.bigint();
  for (let i = 0; i < CALLS; i++) {
    const session = new EventEmitter();
    if (kind === "bare") {
      for (const name of EVENTS)
        session.on(name, (ev: unknown) => {
          sink += ev ? 1 : 0;
        });
    } else if (kind === "listeners") {
      attach(session, { sessionId: `bench-${i}`, roomName: "bench-room", env: {} }); // no collector: the listeners' own work
    } else {
      attach(session, { collectorUrl: url, apiKey: "bench", sessionId: `bench-${i}`, roomName: "bench-room", heartbeatIntervalMs: 0, flushIntervalMs: 100 });
    }
    const t0 = 1_790_000_000_000 + i * 1_000_000;
    for (let r = 0; r < REPEAT; r++) {
      play(session, call, t0 + r * 20_000);
      await yieldNow(); // let the client's batches go out, as a live worker's loop would
    }
    play(session, close, t0 + REPEAT * 20_000);
  }
  const ns = Number(process.hrtime.bigint() - start);
  if (sink < 0) console.log(sink);
  return ns / (CALLS * eventsPerSession);
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;
await run("bare"); // warm-up
await run("attach");
await run("listeners");
const bare: number[] = [];
const attached: number[] = [];
const listenersOnly: number[] = [];
for (let r = 0; r < ROUNDS; r++) {
  bare.push(await run("bare"));
  attached.push(await run("attach"));
  listenersOnly.push(await run("listeners"));
}
await closeAttachClients();
const b = median(bare);
const a = median(attached);
const l = median(listenersOnly);
console.log(`bench:attach  ${CALLS} sessions × ${eventsPerSession} events, ${ROUNDS} rounds, load ${loadavg()[0]?.toFixed(1)}`);
console.log(`bare listener baseline: ${b.toFixed(0)} ns/event (median; rounds ${bare.map((x) => x.toFixed(0)).join(", ")})`);
console.log(`attach():               ${a.toFixed(0)} ns/event (median; rounds ${attached.map((x) => x.toFixed(0)).join(", ")})`);
const received = (await (await fetch(`${url}/count`)).json()) as { rows: number; posts: number };
console.log(`attach(), no collector:  ${l.toFixed(0)} ns/event (median; rounds ${listenersOnly.map((x) => x.toFixed(0)).join(", ")}): the listeners' own work, ${(l - b).toFixed(0)} ns added`);
console.log(`added per event: ${(a - b).toFixed(0)} ns (${(a / b).toFixed(1)} × the bare listener); rows received by the collector: ${received.rows} in ${received.posts} POSTs`);
child.kill();
