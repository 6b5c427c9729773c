/**
 * bench:attach: the cost attach() adds to each AgentSession event. A recorded three-turn call (24
 * events: state changes, metrics, an error, close) is replayed CALLS times on fresh emitters, each
 * call a new attached session, and the time per event is compared with the same replay on a bare
 * listener baseline (one no-op listener per event name) in the same run. attach() pushes through
 * voxgate/client to a loopback collector stand-in (answers 202, counts rows), so the figure includes
 * building the rows and the client's background batching, JSON and HTTP. Rounds alternate.
 *
 *   npm run bench:attach   (env: BENCH_CALLS=2000, BENCH_ROUNDS=5)
 */
import { EventEmitter } from "node:events";
import { createServer } from "node:http";
import { loadavg } from "node:os";
import { attach, closeAttachClients } from "../src/livekit/index.js";
import { play, threeTurnCall } from "../test/livekit/sequences.js";

const CALLS = Number(process.env.BENCH_CALLS ?? 2000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const EVENTS = ["user_state_changed", "agent_state_changed", "metrics_collected", "error", "close"];

let rowsIn = 0;
const collector = createServer((req, res) => {
  let body = "";
  req.on("data", (c: Buffer) => {
    body += c.toString();
  });
  req.on("end", () => {
    try {
      const parsed = JSON.parse(body) as unknown;
      rowsIn += Array.isArray(parsed) ? parsed.length : 0;
    } catch {
      // heartbeats and the like
    }
    res.writeHead(202, { "content-type": "application/json" }).end('{"accepted":0}');
  });
});
await new Promise<void>((r) => collector.listen(0, "127.0.0.1", r));
const address = collector.address();
const url = `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}`;

const call = threeTurnCall("gateway.invalid:8080");
const yieldNow = () => new Promise((r) => setImmediate(r));

async function run(kind: "bare" | "attach"): Promise<number> {
  let sink = 0;
  const start = process.hrtime.bigint();
  for (let i = 0; i < CALLS; i++) {
    const session = new EventEmitter();
    if (kind === "bare") {
      for (const name of EVENTS) session.on(name, (ev: unknown) => {
        sink += ev ? 1 : 0;
      });
    } else {
      attach(session, { collectorUrl: url, apiKey: "bench", sessionId: `bench-${i}`, roomName: "bench-room", heartbeatIntervalMs: 0, flushIntervalMs: 100 });
    }
    play(session, call, 1_790_000_000_000 + i * 100_000);
    if (i % 50 === 49) await yieldNow(); // let the client's batches go out, as a live worker's loop would
  }
  const ns = Number(process.hrtime.bigint() - start);
  if (sink < 0) console.log(sink);
  return ns / (CALLS * call.length);
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;
await run("bare"); // warm-up
await run("attach");
const bare: number[] = [];
const attached: number[] = [];
for (let r = 0; r < ROUNDS; r++) {
  bare.push(await run("bare"));
  attached.push(await run("attach"));
}
await closeAttachClients();
const b = median(bare);
const a = median(attached);
console.log(`bench:attach  ${CALLS} calls × ${call.length} events, ${ROUNDS} rounds, load ${loadavg()[0]?.toFixed(1)}`);
console.log(`bare listener baseline: ${b.toFixed(0)} ns/event (median; rounds ${bare.map((x) => x.toFixed(0)).join(", ")})`);
console.log(`attach():               ${a.toFixed(0)} ns/event (median; rounds ${attached.map((x) => x.toFixed(0)).join(", ")})`);
console.log(`added per event: ${(a - b).toFixed(0)} ns (${(a / b).toFixed(1)} × the bare listener); rows received by the collector: ${rowsIn}`);
await new Promise<void>((r) => collector.close(() => r()));
