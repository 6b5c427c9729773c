/**
 * bench:auth, two modes.
 *
 * `npm run bench:auth` (throughput): requests/s on an authenticated route with a vk_ key vs a static
 * key vs auth off, same run, same route (GET /v1/api-keys/{missing id}: the gate, then one lookup).
 * Target: vk_ ≥ 0.9 × static.
 *
 * `npm run bench:auth -- flood`: a valid vk_ key's p95 on GET /v1/costs while BENCH_FLOOD_RATE (200)
 * wrong tokens/s, at most 32 in flight, are sent with a known key's public prefix, as a ratio to the
 * same key's idle p95 measured in the same run. Two floods: the prefix of a current key and that of a
 * legacy row (stored before key digests, bcrypt hash only). Target: flood p95 ≤ 2 × idle p95.
 */
import { randomUUID } from "node:crypto";
import autocannon from "autocannon";
import bcrypt from "bcryptjs";
import pg from "pg";
import { Worker } from "node:worker_threads";
import { Pool } from "undici";
import { mintVirtualKey, randomBase62 } from "../src/auth/virtual-keys.js";
import { openDatabase } from "../src/db/client.js";
import { runMigrations } from "../src/db/migrate.js";
import { createBenchDatabase, fmt, startServer } from "./support.js";

const DURATION_S = Number(process.env.BENCH_DURATION_S ?? 4);
const ROUNDS = 3;
const CONNECTIONS = 16;
const STATIC_KEY = "bench-static-key-0123456789abcdef";
const PATH = "/v1/api-keys/key_missing";

async function load(url: string, key: string | null): Promise<number> {
  const result = await autocannon({
    url: url + PATH,
    connections: CONNECTIONS,
    duration: DURATION_S,
    headers: key ? { authorization: `Bearer ${key}` } : {},
  });
  if (result.non2xx !== result.requests.total && result["4xx"] === 0) throw new Error("unexpected statuses");
  return result.requests.average;
}

async function mintBenchKey(url: string): Promise<string> {
  const database = await openDatabase({ url });
  await runMigrations(database);
  const { plaintext } = await mintVirtualKey(database.db, { name: "bench", tenantId: null, issuedBy: "bench", scopes: ["*"], role: "admin" });
  await database.close();
  return plaintext;
}

async function throughput() {
  const bench = await createBenchDatabase("auth");
  const plaintext = await mintBenchKey(bench.url);
  const withAuth = await startServer({ DATABASE_URL: bench.url, VOXGATE_API_KEY: STATIC_KEY });
  const noAuth = await startServer({ DATABASE_URL: bench.url, VOXGATE_API_KEY: undefined });
  try {
    await load(withAuth.baseUrl, plaintext); // warm-up: first verification, JIT
    // Interleaved rounds, medians: background load on a shared 2-core machine drifts over time.
    const runs = { off: [] as number[], static: [] as number[], vk: [] as number[] };
    for (let i = 0; i < ROUNDS; i++) {
      runs.off.push(await load(noAuth.baseUrl, null));
      runs.static.push(await load(withAuth.baseUrl, STATIC_KEY));
      runs.vk.push(await load(withAuth.baseUrl, plaintext));
    }
    const off = median(runs.off);
    const staticRps = median(runs.static);
    const vkRps = median(runs.vk);
    console.log(`bench:auth  GET ${PATH}  ${CONNECTIONS} connections, ${ROUNDS} interleaved rounds × ${DURATION_S}s, medians, Postgres`);
    console.log(`  auth off      ${fmt(off, 0)} req/s  (baseline)`);
    console.log(`  static key    ${fmt(staticRps, 0)} req/s  = ${fmt(staticRps / off, 2)} × auth off`);
    console.log(`  vk_ key       ${fmt(vkRps, 0)} req/s  = ${fmt(vkRps / staticRps, 2)} × static (target ≥ 0.9)`);
  } finally {
    await withAuth.stop();
    await noAuth.stop();
    await bench.drop();
  }
}

// ---------------------------------------------------------------------------------------------
// flood mode

const FLOOD_RATE = Number(process.env.BENCH_FLOOD_RATE ?? 200);
const FLOOD_IN_FLIGHT = 32;
const FLOOD_S = Number(process.env.BENCH_DURATION_S ?? 6);
const FLOOD_ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
/** The valid key's probe: one GET /v1/costs every PROBE_INTERVAL_MS, one at a time. */
const PROBE_INTERVAL_MS = 20;

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;
function p95(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil(0.95 * s.length) - 1)] ?? 0;
}

/** A row as a key minted before digests existed: bcrypt hash only (the columns every schema version has). */
async function insertLegacyKey(url: string): Promise<string> {
  const plaintext = `vk_${randomBase62(44)}`;
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  await client.query("INSERT INTO api_keys (id, name, key_prefix, key_hash, scopes, role) VALUES ($1, 'legacy', $2, $3, $4, 'admin')", [
    `key_${randomUUID().replaceAll("-", "")}`,
    plaintext.slice(0, 15),
    await bcrypt.hash(plaintext, 10),
    ["*"],
  ]);
  await client.end();
  return plaintext;
}

interface Phase {
  p95: number;
  p50: number;
  probes: number;
  floodSent: number;
  floodStatuses: Record<string, number>;
}

/**
 * The flood runs on its own thread (node:http, keep-alive, ≤ FLOOD_IN_FLIGHT sockets), so the probe's
 * timings are not the flood client's own work. Tokens: the known prefix + random base62.
 */
const FLOOD_WORKER = `
const { parentPort, workerData: w } = require("node:worker_threads");
const http = require("node:http");
const { randomBytes } = require("node:crypto");
const B62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
const agent = new http.Agent({ keepAlive: true, maxSockets: w.inFlight });
const token = () => w.prefix + Array.from(randomBytes(w.length - w.prefix.length), (b) => B62[b % 62]).join("");
const statuses = {};
let sent = 0, inFlight = 0;
const started = performance.now();
const until = started + w.seconds * 1000;
const timer = setInterval(() => {
  const due = Math.floor(((performance.now() - started) / 1000) * w.rate);
  while (sent < due && inFlight < w.inFlight && performance.now() < until) {
    sent++; inFlight++;
    const req = http.request(w.url + "/v1/costs", { agent, headers: { authorization: "Bearer " + token() } }, (res) => {
      res.resume();
      res.on("end", () => { statuses[res.statusCode] = (statuses[res.statusCode] || 0) + 1; inFlight--; });
    });
    req.on("error", () => { statuses.error = (statuses.error || 0) + 1; inFlight--; });
    req.end();
  }
  if (performance.now() >= until && inFlight === 0) {
    clearInterval(timer);
    agent.destroy();
    parentPort.postMessage({ sent, statuses });
  }
}, 5);`;

/** Probes the valid key for FLOOD_S seconds, with or without a flood of wrong tokens for `prefix`. */
async function phase(baseUrl: string, validKey: string, floodPrefix: string | null): Promise<Phase> {
  const probePool = new Pool(baseUrl, { connections: 1 });
  const flooding = floodPrefix
    ? new Promise<{ sent: number; statuses: Record<string, number> }>((resolve, reject) => {
        const w = new Worker(FLOOD_WORKER, {
          eval: true,
          workerData: { url: baseUrl, prefix: floodPrefix, length: validKey.length, rate: FLOOD_RATE, inFlight: FLOOD_IN_FLIGHT, seconds: FLOOD_S },
        });
        w.once("message", (m: { sent: number; statuses: Record<string, number> }) => {
          resolve(m);
          void w.terminate();
        });
        w.once("error", reject);
      })
    : Promise.resolve({ sent: 0, statuses: {} });
  const until = performance.now() + FLOOD_S * 1000;
  const latencies: number[] = [];
  while (performance.now() < until) {
    const t0 = performance.now();
    const res = await probePool.request({ method: "GET", path: "/v1/costs", headers: { authorization: `Bearer ${validKey}` } });
    await res.body.dump();
    if (res.statusCode !== 200) throw new Error(`valid key answered ${res.statusCode}`);
    const ms = performance.now() - t0;
    latencies.push(ms);
    if (ms < PROBE_INTERVAL_MS) await new Promise((r) => setTimeout(r, PROBE_INTERVAL_MS - ms));
  }
  const f = await flooding;
  await probePool.close();
  return { p95: p95(latencies), p50: median(latencies), probes: latencies.length, floodSent: f.sent, floodStatuses: f.statuses };
}

async function flood() {
  const bench = await createBenchDatabase("auth_flood");
  const validKey = await mintBenchKey(bench.url);
  const legacyKey = await insertLegacyKey(bench.url);
  const server = await startServer({ DATABASE_URL: bench.url, VOXGATE_API_KEY: STATIC_KEY });
  try {
    await phase(server.baseUrl, validKey, null); // warm-up: first verification, JIT
    const rows: { name: string; p: Phase }[] = [];
    // Interleaved rounds (idle, flood on a current key's prefix, flood on a legacy key's prefix), medians
    // per kind: background load on a shared machine drifts over time.
    for (let round = 0; round < FLOOD_ROUNDS; round++) {
      rows.push({ name: "idle", p: await phase(server.baseUrl, validKey, null) });
      rows.push({ name: "flood: prefix of a current key", p: await phase(server.baseUrl, validKey, validKey.slice(0, 15)) });
      rows.push({ name: "flood: prefix of a legacy bcrypt key", p: await phase(server.baseUrl, validKey, legacyKey.slice(0, 15)) });
    }
    const medianP95 = (name: string) => median(rows.filter((r) => r.name === name).map((r) => r.p.p95));
    const idle = medianP95("idle");
    console.log(
      `bench:auth flood  valid vk_ key: GET /v1/costs one at a time every ${PROBE_INTERVAL_MS} ms; flood ${FLOOD_RATE} wrong tokens/s (≤ ${FLOOD_IN_FLIGHT} in flight), ${FLOOD_S}s phases, Postgres`,
    );
    for (const { name, p } of rows) {
      const flooded = p.floodSent > 0 ? `, flood sent ${fmt(p.floodSent / FLOOD_S, 0)}/s answered ${JSON.stringify(p.floodStatuses)}` : "";
      console.log(
        `  ${name.padEnd(38)} p50 ${fmt(p.p50, 2)} ms  p95 ${fmt(p.p95, 2)} ms  = ${fmt(p.p95 / idle, 2)} × idle p95 (${p.probes} probes${flooded})`,
      );
    }
    console.log(`  baseline: idle p95 ${fmt(idle, 2)} ms (median of ${FLOOD_ROUNDS} idle phases); target: flood p95 ≤ 2 × idle p95`);
    for (const name of ["flood: prefix of a current key", "flood: prefix of a legacy bcrypt key"]) {
      console.log(`  ${name}: median p95 ${fmt(medianP95(name), 2)} ms = ${fmt(medianP95(name) / idle, 2)} × idle p95`);
    }
    const metrics = await fetch(`${server.baseUrl}/v1/metrics`, { headers: { authorization: `Bearer ${STATIC_KEY}` } }).then((r) => r.text());
    const failures = metrics.split("\n").filter((l) => l.startsWith("voxgate_auth_failures_total"));
    if (failures.length > 0) console.log(`  server: ${failures.join("; ")}`);
  } finally {
    await server.stop();
    await bench.drop();
  }
}

if (process.argv.includes("flood") || process.env.BENCH_AUTH_MODE === "flood") await flood();
else await throughput();
