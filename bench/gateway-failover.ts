/**
 * bench:gateway-failover — live STT failover (src/gateway/failover/legs.ts), in one process: a relay
 * server running the gateway's own relay() over either the vendor socket itself (plain, the same-run
 * baseline) or a LegSwitch, between a `ws` client and two scripted loopback Deepgram vendors
 * (test/support/stubs/deepgram-live.ts). No auth, routing or recording: what is measured is the leg
 * switch alone.
 *   - added cost per frame before any failure: each stream sends 100 ms linear16 frames one at a time
 *     and waits for the frame's interim `Results`; round-trip p50/p99 and CPU (process.cpuUsage, the
 *     client and vendors included, the same in both) per frame, LegSwitch minus plain, rounds
 *     interleaved (every other round in reverse order).
 *   - failover gap: the primary fails after 10 frames (dropped connection, close 1011, Deepgram's
 *     error frame, stall) while the client streams a frame every 20 ms; the backup answers each frame
 *     after a fixed BENCH_ANSWER_MS (the same-run baseline of the gap). gap = failure detected → the
 *     new leg's first result (the record's failover_gap_ms); for the stall, the client's longest wait
 *     between two results too (the stall_ms window included).
 * Targets (issue 31): gap p50 ≤ 250 ms without the stall window; ≤ 0.02 ms per frame over plain relay.
 */
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { loadavg } from "node:os";
import { WebSocket, WebSocketServer } from "ws";
import type { Attempt } from "../src/gateway/attempt.js";
import { deepgramListenMeter } from "../src/gateway/audio/stream-meters.js";
import { deepgramAudioFormat } from "../src/gateway/audio/stt-units.js";
import { deepgramLiveWire } from "../src/gateway/failover/deepgram-live.js";
import { LegSwitch } from "../src/gateway/failover/legs.js";
import type { Leg } from "../src/gateway/failover/switching-upstream.js";
import type { UpstreamTarget } from "../src/gateway/protocol.js";
import { RELAY_SOCKET_OPTIONS } from "../src/gateway/ws/connect.js";
import { relay } from "../src/gateway/ws/relay.js";
import { DeepgramLiveStub, type LiveLegScript, wordFrame } from "../test/support/stubs/deepgram-live.js";
import { percentile } from "./support.js";

const FRAMES = Number(process.env.BENCH_FRAMES ?? 3_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 4);
const TRIALS = Number(process.env.BENCH_TRIALS ?? 30);
const STALL_TRIALS = Number(process.env.BENCH_STALL_TRIALS ?? 10);
const STALL_MS = Number(process.env.BENCH_STALL_MS ?? 2_000);
const ANSWER_MS = Number(process.env.BENCH_ANSWER_MS ?? 20);
const QUERY = new URLSearchParams("model=nova-3&encoding=linear16&sample_rate=16000&channels=1");

const primary = await new DeepgramLiveStub().start();
const backup = await new DeepgramLiveStub().start();

function open(url: string): Promise<WebSocket> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { ...RELAY_SOCKET_OPTIONS });
    ws.once("open", () => {
      ws.pause();
      resolve(ws);
    });
    ws.once("error", reject);
  });
}

const target = (providerId: string): UpstreamTarget => ({ modelId: `${providerId}/nova-3`, modality: "stt", providerId, providerType: "deepgram", modelName: "nova-3", baseUrl: "", apiKey: "" });
const leg = (socket: WebSocket, providerId: string): Leg => {
  const attempt: Attempt = { id: providerId, target: target(providerId), status: "success", units: {} };
  return { socket, target: attempt.target, meter: deepgramListenMeter(deepgramAudioFormat(QUERY)), attempt, release: () => {}, offset: 0 };
};

/** Gaps the leg switches reported (detection → first result of the new leg), ms. */
const gaps: number[] = [];

const wss = new WebSocketServer({ ...RELAY_SOCKET_OPTIONS, noServer: true });
const server = createServer((_req, res) => res.writeHead(426).end());
server.on("upgrade", (req, socket, head) => {
  const legs = new URL(req.url ?? "/", "http://relay").searchParams.get("legs") === "1";
  void open(`${primary.wsUrl}/v1/listen?${QUERY}`).then((upstream) => {
    wss.handleUpgrade(req, socket, head, (client) => {
      if (!legs) {
        relay(client, upstream, { meter: deepgramListenMeter(deepgramAudioFormat(QUERY)), onEnd: () => {} });
        return;
      }
      const wire = deepgramLiveWire(QUERY);
      if (!wire) throw new Error("raw audio expected");
      const sw = new LegSwitch({ first: leg(upstream, "primary"), wire, stallMs: STALL_MS, replaySeconds: 5, next: async () => leg(await open(`${backup.wsUrl}/v1/listen?${QUERY}`), "backup") });
      sw.observer = { switched: () => {}, gap: (_l, ms) => gaps.push(ms) };
      relay(client, sw, { meter: sw.meter, onEnd: () => {} });
    });
  });
});
await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
const relayUrl = `ws://127.0.0.1:${(server.address() as AddressInfo).port}/v1/listen`;

function connect(legs: boolean): Promise<WebSocket> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`${relayUrl}?legs=${legs ? 1 : 0}`, { perMessageDeflate: false });
    ws.once("open", () => resolve(ws));
    ws.once("error", reject);
  });
}

/** One stream of `frames` frames, each sent once the previous one's interim result is back; RTTs in ms. */
async function rttStream(legs: boolean, frames: number): Promise<number[]> {
  const ws = await connect(legs);
  const rtts: number[] = [];
  await new Promise<void>((resolve) => {
    let k = 0;
    let sentAt = 0;
    const next = () => {
      if (k === frames) return resolve();
      sentAt = performance.now();
      ws.send(wordFrame(k++ % 30_000));
    };
    ws.on("message", (data) => {
      const m = JSON.parse(String(data)) as { is_final?: boolean };
      if (m.is_final) return;
      rtts.push(performance.now() - sentAt);
      next();
    });
    next();
  });
  ws.close();
  return rtts;
}

const rtt: Record<"plain" | "legs", number[]> = { plain: [], legs: [] };
const cpu: Record<"plain" | "legs", number> = { plain: 0, legs: 0 };
await rttStream(true, 200); // warm-up
await rttStream(false, 200);
for (let r = 0; r < ROUNDS; r++) {
  const order: Array<"plain" | "legs"> = r % 2 === 0 ? ["plain", "legs"] : ["legs", "plain"];
  for (const mode of order) {
    const c0 = process.cpuUsage();
    rtt[mode].push(...(await rttStream(mode === "legs", FRAMES)));
    const c = process.cpuUsage(c0);
    cpu[mode] += c.user + c.system;
  }
}
const p = (xs: number[], q: number) => percentile([...xs].sort((a, b) => a - b), q);
const perFrameCpu = (mode: "plain" | "legs") => cpu[mode] / (ROUNDS * FRAMES);

/** One failover trial: frames every 20 ms until the seam's first result has come; the client's longest wait between results. */
async function trial(script: LiveLegScript): Promise<{ gap: number; clientWait: number }> {
  primary.legs = [script];
  backup.answerDelayMs = ANSWER_MS;
  const before = gaps.length;
  const ws = await connect(true);
  let lastResult = performance.now();
  let longest = 0;
  ws.on("message", () => {
    const now = performance.now();
    longest = Math.max(longest, now - lastResult);
    lastResult = now;
  });
  let k = 0;
  while (gaps.length === before || k < 20) {
    ws.send(wordFrame(k++));
    await new Promise((r) => setTimeout(r, 20));
  }
  ws.close();
  return { gap: gaps[before] as number, clientWait: longest };
}

const kinds: Array<[string, LiveLegScript["how"], number]> = [
  ["abnormal close (connection dropped)", "drop", TRIALS],
  ["close 1011", "close", TRIALS],
  ["error frame", "error", TRIALS],
  [`stall (stall_ms ${STALL_MS})`, "stall", STALL_TRIALS],
];
const gapRows: string[] = [];
for (const [name, how, n] of kinds) {
  const g: number[] = [];
  const w: number[] = [];
  for (let i = 0; i < n; i++) {
    const t = await trial({ how, afterFrames: 10 });
    g.push(t.gap);
    w.push(t.clientWait);
  }
  const extra = how === "stall" ? `; the client's longest wait between results p50 ${p(w, 0.5).toFixed(1)} ms, p99 ${p(w, 0.99).toFixed(1)} ms (stall window included)` : "";
  gapRows.push(`  ${name}: gap p50 ${p(g, 0.5).toFixed(1)} ms, p99 ${p(g, 0.99).toFixed(1)} ms (${n} trials) = ${(p(g, 0.5) / ANSWER_MS).toFixed(2)} × the vendor's fixed answer time${extra}`);
}

const added50 = p(rtt.legs, 0.5) - p(rtt.plain, 0.5);
console.log(`bench:gateway-failover  ${new Date().toISOString()}  load ${loadavg().map((l) => l.toFixed(1)).join(" ")}`);
console.log(`per frame before any failure (${ROUNDS} rounds × ${FRAMES} frames each way):`);
console.log(`  plain relay (baseline): RTT p50 ${p(rtt.plain, 0.5).toFixed(3)} ms, p99 ${p(rtt.plain, 0.99).toFixed(3)} ms; CPU ${perFrameCpu("plain").toFixed(1)} µs per frame`);
console.log(`  LegSwitch:              RTT p50 ${p(rtt.legs, 0.5).toFixed(3)} ms, p99 ${p(rtt.legs, 0.99).toFixed(3)} ms; CPU ${perFrameCpu("legs").toFixed(1)} µs per frame`);
console.log(`  added: ${added50.toFixed(3)} ms at p50 (${(p(rtt.legs, 0.5) / p(rtt.plain, 0.5)).toFixed(3)} × plain), ${(perFrameCpu("legs") - perFrameCpu("plain")).toFixed(1)} µs CPU per frame (${(perFrameCpu("legs") / perFrameCpu("plain")).toFixed(3)} × plain)`);
console.log(`failover gap (backup answers in a fixed ${ANSWER_MS} ms, the baseline):`);
for (const row of gapRows) console.log(row);

wss.close();
server.close();
await Promise.all([primary.stop(), backup.stop()]);
