/**
 * bench:gateway-ws — WebSocket STT relay: the same loopback Deepgram stub (its own process) streamed
 * to directly and through Voxgate (`voxgate serve` on Postgres, recording on), in one run.
 *   - added ms per frame: each stream sends 100 ms linear16 frames one at a time and waits for the
 *     frame's `Results` (round trip per frame); p50/p99 through Voxgate minus direct, rounds interleaved.
 *   - unit accuracy: each Voxgate stream ends with CloseStream; the audio_seconds recorded for it
 *     (its rows summed) against the stub's truth (the bytes it received, as its Metadata.duration).
 * Target (issue 11): relay ≤ 0.2 ms per frame at p50.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import pg from "pg";
import { WebSocket } from "ws";
import { createBenchDatabase, ROOT, startServer } from "./support.js";

const FRAMES = Number(process.env.BENCH_FRAMES ?? 3000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const STREAMS_PER_ROUND = Number(process.env.BENCH_STREAMS ?? 2);
const KEY = "bench-gateway-ws-key-0123456789abcdef";
const PROVIDER_KEY = "dg-bench-provider-key-0123456789";
const QUERY = "model=nova-3&encoding=linear16&sample_rate=16000&channels=1";
const FRAME = Buffer.alloc(3200, 7); // 100 ms of 16 kHz mono linear16

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
        ws.send(JSON.stringify({ type: "CloseStream" }));
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
      if (text.startsWith('{"type":"Results"')) {
        rtts.push(performance.now() - sentAt);
        sendNext();
      } else if (text.includes('"Metadata"')) metadataDuration = (JSON.parse(text) as { duration: number }).duration;
    });
    ws.on("close", () => resolve({ rtts, requestId, sentSeconds: (frames * FRAME.length) / 32_000, metadataDuration }));
    ws.on("unexpected-response", (_req, res) => reject(new Error(`upgrade refused: ${res.statusCode} ${String(res.headers["x-voxgate-error"])}`)));
    ws.on("error", reject);
  });
}

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))] ?? Number.NaN;
const stats = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return { p50: percentile(s, 0.5), p99: percentile(s, 0.99), n: s.length };
};

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

async function main() {
  const stub = await spawnWithPort(["--import", "tsx", join(ROOT, "bench/gateway-ws-stub.ts")]);
  const stubOrigin = `127.0.0.1:${stub.port}`;
  const dir = mkdtempSync(join(tmpdir(), "voxgate-bench-gw-ws-"));
  const configPath = join(dir, "voxgate.yaml");
  writeFileSync(
    configPath,
    `auth:\n  api_keys: [${KEY}]\nproviders:\n  deepgram: { api_key: "${PROVIDER_KEY}", base_url: "http://${stubOrigin}/v1" }\nmodels:\n  stt:\n    deepgram/nova-3: { provider: deepgram, model: nova-3 }\nworkers: { enabled: false }\n`,
  );
  const db = await createBenchDatabase("gateway_ws");
  const voxgate = await startServer({ DATABASE_URL: db.url, VOXGATE_CONFIG: configPath, LOG_LEVEL: "warn" });
  const direct = { url: `ws://${stubOrigin}/v1/listen?${QUERY}`, headers: { authorization: `Token ${PROVIDER_KEY}` } };
  const through = { url: `${voxgate.baseUrl.replace("http://", "ws://")}/deepgram/v1/listen?${QUERY}`, headers: { authorization: `Token ${KEY}` } };
  const loadBefore = loadavg();
  try {
    // Warm-up: JIT, connections, the routing table.
    await stream(direct.url, direct.headers, 300);
    await stream(through.url, through.headers, 300);

    const rtt = { direct: [] as number[], voxgate: [] as number[] };
    const accuracy: Array<{ recorded: number; truth: number }> = [];
    const perStream = Math.ceil(FRAMES / (ROUNDS * STREAMS_PER_ROUND));
    for (let r = 0; r < ROUNDS; r++) {
      for (let s = 0; s < STREAMS_PER_ROUND; s++) {
        rtt.direct.push(...(await stream(direct.url, direct.headers, perStream)).rtts);
        const v = await stream(through.url, through.headers, perStream);
        rtt.voxgate.push(...v.rtts);
        if (!v.requestId) throw new Error("no X-Voxgate-Request-Id on the upgrade");
        accuracy.push({ recorded: await recordedSeconds(db.url, v.requestId), truth: v.metadataDuration ?? v.sentSeconds });
      }
    }
    const d = stats(rtt.direct);
    const v = stats(rtt.voxgate);
    const worst = Math.max(...accuracy.map((a) => Math.abs(a.recorded - a.truth) / a.truth));
    const totalRecorded = accuracy.reduce((a, x) => a + x.recorded, 0);
    const totalTruth = accuracy.reduce((a, x) => a + x.truth, 0);
    console.log(`bench:gateway-ws — ${new Date().toISOString()}, load before ${loadBefore.map((l) => l.toFixed(2)).join(" ")}, after ${loadavg().map((l) => l.toFixed(2)).join(" ")}`);
    console.log(`Deepgram live relay, ${d.n} + ${v.n} frames of 100 ms linear16, one in flight per stream, ${ROUNDS} interleaved rounds of ${STREAMS_PER_ROUND} streams:`);
    console.log(`  direct:  p50 ${d.p50.toFixed(3)} ms, p99 ${d.p99.toFixed(3)} ms per frame (round trip to its Results)`);
    console.log(`  voxgate: p50 ${v.p50.toFixed(3)} ms, p99 ${v.p99.toFixed(3)} ms per frame`);
    console.log(`  added per frame: p50 ${(v.p50 - d.p50).toFixed(3)} ms (target ≤ 0.2 ms; ratio ${(v.p50 / d.p50).toFixed(2)}× direct), p99 ${(v.p99 - d.p99).toFixed(3)} ms`);
    console.log(`  unit accuracy: ${accuracy.length} streams, recorded ${totalRecorded.toFixed(3)} s vs stub truth ${totalTruth.toFixed(3)} s; worst stream error ${(worst * 100).toFixed(4)} %`);
  } finally {
    await voxgate.stop();
    stub.child.kill("SIGTERM");
    await db.drop();
  }
}

await main();
