/**
 * bench:usage: GET /v1/billing/usage for one month over 1M stored request rows on Postgres, p50/p95
 * over loopback HTTP, against the same per-tenant aggregate as one raw SQL query, in the same run.
 * Target: within 1.5× of the raw query. Creates and drops its own database on TEST_DATABASE_URL's server.
 */
import { randomBytes } from "node:crypto";
import type { AddressInfo } from "node:net";
import { serve } from "@hono/node-server";
import pg from "pg";
import { parseEnv } from "../src/config/env.js";
import { parseConfigText } from "../src/config/load.js";
import { openDatabase } from "../src/db/client.js";
import { runMigrations } from "../src/db/migrate.js";
import { createApp } from "../src/http/app.js";
import { silentLogger } from "../src/logging.js";
import { createServices, startWorkers, stopWorkers } from "../src/compose.js";
import { summarizeSamples } from "../src/stats/summary.js";

const ROWS = Number(process.env.BENCH_ROWS ?? 1_000_000);
const ITERATIONS = 15;
const adminUrl = process.env.TEST_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test";
const name = `voxgate_bench_usage_${randomBytes(4).toString("hex")}`;

async function admin(query: string): Promise<void> {
  const c = new pg.Client({ connectionString: adminUrl });
  await c.connect();
  try {
    await c.query(query);
  } finally {
    await c.end();
  }
}

await admin(`CREATE DATABASE ${name}`);
const url = new URL(adminUrl);
url.pathname = `/${name}`;
const database = await openDatabase({ url: url.toString() });
try {
  await runMigrations(database);
  const raw = new pg.Client({ connectionString: url.toString() });
  raw.on("error", () => {});
  await raw.connect();
  const t0 = Date.now();
  // 1M rows spread over October 2026, 50 tenants, three modalities, a realistic mix of money values.
  await raw.query(`
    insert into requests (id, ts, tenant_id, project, modality, model_id, provider, status, cost_usd, rated_price_usd, rate_rule, pricing, input_units, output_units)
    select gen_random_uuid(),
           timestamptz '2026-10-01T00:00:00Z' + ((g - 1) * (31 * 86400.0 / ${ROWS})) * interval '1 second',
           'tenant-' || (g % 50),
           'default',
           (array['stt','llm','tts'])[1 + g % 3],
           (array['deepgram/nova-3','openai/gpt-4.1-mini','elevenlabs/eleven_flash_v2_5'])[1 + g % 3],
           (array['deepgram','openai','elevenlabs'])[1 + g % 3],
           case when g % 97 = 0 then 'error' else 'success' end,
           round((0.0001 + (g % 1000) * 0.0000123)::numeric, 10),
           round((0.000125 + (g % 1000) * 0.0000153)::numeric, 10),
           'cost_plus:1.25',
           'priced',
           (g % 2000) + 1,
           g % 300
    from generate_series(1, ${ROWS}) g`);
  await raw.query("analyze requests");
  console.log(`bench:usage — ${ROWS.toLocaleString("en")} rows inserted in ${((Date.now() - t0) / 1000).toFixed(1)} s (${database.kind})`);

  const config = parseConfigText("", "bench.yaml", {});
  const services = createServices({ database, config, env: parseEnv({}), log: silentLogger });
  await startWorkers(services);
  const app = createApp(services);
  const server = await new Promise<ReturnType<typeof serve>>((resolve) => {
    const s = serve({ fetch: app.fetch, port: 0, hostname: "127.0.0.1" }, () => resolve(s));
  });
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  const endpoint = async () => {
    const res = await fetch(`${base}/v1/billing/usage?from=2026-10-01&to=2026-11-01`);
    const body = (await res.json()) as { totals: { requests: number } };
    if (res.status !== 200 || body.totals.requests !== ROWS) throw new Error(`unexpected answer ${res.status} ${JSON.stringify(body).slice(0, 200)}`);
  };
  const rawQuery = async () => {
    const r = await raw.query(
      `select tenant_id, count(*) as requests, sum(rated_price_usd) as revenue, sum(cost_usd) as cost,
              sum(rated_price_usd) - sum(cost_usd) as margin
         from requests where ts >= $1 and ts < $2 group by tenant_id`,
      ["2026-10-01T00:00:00Z", "2026-11-01T00:00:00Z"],
    );
    if (r.rows.length !== 50) throw new Error("unexpected raw answer");
  };
  const timed = async (fn: () => Promise<void>) => {
    const s = process.hrtime.bigint();
    await fn();
    return Number(process.hrtime.bigint() - s) / 1e6;
  };

  await endpoint();
  await rawQuery();
  const api: number[] = [];
  const sqlMs: number[] = [];
  // Alternate so both see the same cache and CPU conditions.
  for (let i = 0; i < ITERATIONS; i++) {
    api.push(await timed(endpoint));
    sqlMs.push(await timed(rawQuery));
  }
  const a = summarizeSamples(api);
  const b = summarizeSamples(sqlMs);
  if (!a || !b) throw new Error("no samples");
  console.log(`  GET /v1/billing/usage (one month): p50 ${a.p50} ms, p95 ${a.p95} ms  (${ITERATIONS} runs, loopback HTTP)`);
  console.log(`  raw SQL aggregate (baseline):      p50 ${b.p50} ms, p95 ${b.p95} ms`);
  console.log(`  ratio: p50 ${(a.p50 / b.p50).toFixed(2)}×, p95 ${(a.p95 / b.p95).toFixed(2)}× the raw query (target ≤ 1.5×)`);

  await new Promise<void>((r) => server.close(() => r()));
  await stopWorkers(services);
  await raw.end();
} catch (err) {
  console.error("bench:usage failed:", err);
  process.exitCode = 1;
} finally {
  await database.close();
  await admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  // A failed run may leave the HTTP server or pool open: exit explicitly.
  process.exit(process.exitCode ?? 0);
}
