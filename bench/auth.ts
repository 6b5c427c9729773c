/**
 * bench:auth — requests/s on an authenticated route with a vk_ key vs a static key vs auth off,
 * same run, same route (GET /v1/api-keys/{missing id}: the gate, then one primary-key lookup).
 * Target: vk_ ≥ 0.9 × static (bcrypt runs once per key, not per request).
 */
import autocannon from "autocannon";
import { mintVirtualKey } from "../src/auth/virtual-keys.js";
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

async function main() {
  const bench = await createBenchDatabase("auth");
  const database = await openDatabase({ url: bench.url });
  await runMigrations(database);
  const { plaintext } = await mintVirtualKey(database.db, {
    name: "bench",
    tenantId: null,
    issuedBy: "bench",
    scopes: ["*"],
    role: "admin",
  });
  await database.close();

  const withAuth = await startServer({ DATABASE_URL: bench.url, VOXGATE_API_KEY: STATIC_KEY });
  const noAuth = await startServer({ DATABASE_URL: bench.url, VOXGATE_API_KEY: undefined });
  try {
    await load(withAuth.baseUrl, plaintext); // warm-up: the one bcrypt compare, JIT
    // Interleaved rounds, medians: background load on a shared 2-core machine drifts over time.
    const runs = { off: [] as number[], static: [] as number[], vk: [] as number[] };
    for (let i = 0; i < ROUNDS; i++) {
      runs.off.push(await load(noAuth.baseUrl, null));
      runs.static.push(await load(withAuth.baseUrl, STATIC_KEY));
      runs.vk.push(await load(withAuth.baseUrl, plaintext));
    }
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;
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

await main();
