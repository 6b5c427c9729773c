/**
 * bench:body-bounds — does one kind of heavy request stall everyone else?
 *
 * A production server (dist/) is probed with GET /health every 10 ms; its p99 is measured first
 * idle (the same-run baseline), then while BENCH_ATTACK_RATE (8) attack bodies per second arrive:
 * (a) 8 MiB of nested "[" on POST /openai/v1/chat/completions, (b) a transcription upload of 160k
 * tiny multipart parts. Both are refused before any allocation-heavy parsing (src/http/body.ts,
 * splitMultipart's part bound). Target: /health p99 under 50 ms under attack. Prints each phase's
 * p50/p99, the ratio to the idle p99 and the attack bodies' own answer time.
 */
import { request } from "node:http";
import { createBenchDatabase, fmt, percentile, startServer } from "./support.js";

const PHASE_S = Number(process.env.BENCH_DURATION_S ?? 6);
const RATE = Number(process.env.BENCH_ATTACK_RATE ?? 8);
const KEY = "bench-body-bounds-key-0123456789";

function post(url: string, body: Buffer, type: string): Promise<{ status: number; ms: number }> {
  const t0 = performance.now();
  return new Promise((resolve, reject) => {
    const req = request(url, { method: "POST", headers: { authorization: `Bearer ${KEY}`, "content-type": type, "content-length": body.byteLength } }, (res) => {
      res.resume();
      res.on("end", () => resolve({ status: res.statusCode ?? 0, ms: performance.now() - t0 }));
    });
    req.on("error", reject);
    req.end(body);
  });
}

function health(base: string): Promise<number> {
  const t0 = performance.now();
  return new Promise((resolve, reject) => {
    request(`${base}/health`, (res) => {
      res.resume();
      res.on("end", () => resolve(performance.now() - t0));
    })
      .on("error", reject)
      .end();
  });
}

/** Probes /health every 10 ms for PHASE_S seconds while `attack` (if any) fires RATE times a second. */
async function phase(base: string, attack: (() => Promise<{ status: number; ms: number }>) | null) {
  const probes: number[] = [];
  const attacks: { status: number; ms: number }[] = [];
  const pending: Promise<unknown>[] = [];
  const end = performance.now() + PHASE_S * 1000;
  const fire = attack
    ? setInterval(() => {
        pending.push(attack().then((a) => attacks.push(a)));
      }, 1000 / RATE)
    : null;
  while (performance.now() < end) {
    probes.push(await health(base));
    await new Promise((r) => setTimeout(r, 10));
  }
  if (fire) clearInterval(fire);
  await Promise.all(pending);
  probes.sort((a, b) => a - b);
  const attackMs = attacks.map((a) => a.ms).sort((a, b) => a - b);
  return { p50: percentile(probes, 0.5), p99: percentile(probes, 0.99), n: probes.length, attacks: attacks.length, statuses: [...new Set(attacks.map((a) => a.status))], attackP50: percentile(attackMs, 0.5) };
}

async function main() {
  const db = await createBenchDatabase("body_bounds");
  const server = await startServer({ DATABASE_URL: db.url, VOXGATE_API_KEY: KEY });
  try {
    const nested = Buffer.from("[".repeat(8 * 1024 * 1024 - 1024));
    const part = "--b\r\nContent-Disposition: form-data; name=\"x\"\r\n\r\n1\r\n";
    const parts = Buffer.from(`${part.repeat(160_000)}--b--\r\n`);
    const chat = () => post(`${server.baseUrl}/openai/v1/chat/completions`, nested, "application/json");
    const upload = () => post(`${server.baseUrl}/openai/v1/audio/transcriptions`, parts, "multipart/form-data; boundary=b");
    await phase(server.baseUrl, null); // warm-up
    const idle = await phase(server.baseUrl, null);
    const deep = await phase(server.baseUrl, chat);
    const multi = await phase(server.baseUrl, upload);
    console.log(`bench:body-bounds  ${RATE} attack bodies/s, /health probed every 10 ms for ${PHASE_S} s per phase`);
    console.log(`  idle (baseline)        /health p50 ${fmt(idle.p50, 2)} ms  p99 ${fmt(idle.p99, 2)} ms  (${idle.n} probes)`);
    for (const [name, r] of [
      ["8 MiB nested [ (chat)", deep],
      ["160k multipart parts", multi],
    ] as const) {
      console.log(
        `  ${name.padEnd(22)} /health p50 ${fmt(r.p50, 2)} ms  p99 ${fmt(r.p99, 2)} ms  = ${fmt(r.p99 / idle.p99, 2)}x idle p99  (${r.n} probes; ${r.attacks} attacks answered ${r.statuses.join("/")} in p50 ${fmt(r.attackP50, 1)} ms)`,
      );
    }
    const worst = Math.max(deep.p99, multi.p99);
    console.log(`  target: /health p99 < 50 ms under attack: ${worst < 50 ? "met" : "NOT met"} (${fmt(worst, 2)} ms)`);
  } finally {
    await server.stop();
    await db.drop();
  }
}

await main();
