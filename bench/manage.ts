/**
 * bench:manage — p50/p95 of GET /v1/projects/{id} and GET /v1/status over loopback HTTP, with
 * 100 providers, 100 models, 100 projects and 1M request rows (last 48 h, 100 projects), against
 * the raw SQL those routes run, issued directly through pg in the same run (the floor).
 */
import type { AddressInfo } from "node:net";
import { serve } from "@hono/node-server";
import pg from "pg";
import { request } from "undici";
import { parseEnv } from "../src/config/env.js";
import { configSchema } from "../src/config/schema.js";
import { openDatabase } from "../src/db/client.js";
import { runMigrations } from "../src/db/migrate.js";
import { createApp } from "../src/http/app.js";
import { silentLogger } from "../src/logging.js";
import { createServices } from "../src/compose.js";
import { summarizeSamples } from "../src/stats/summary.js";
import { createBenchDatabase } from "./support.js";

const ROWS = Number(process.env.BENCH_ROWS ?? 1_000_000);
const ENTITIES = 100;
const ITERATIONS = Number(process.env.BENCH_ITERATIONS ?? 300);
const WARMUP = 30;


async function seed(client: pg.Client) {
  await client.query(`INSERT INTO providers (provider_id, provider_type, api_key_masked, base_url)
    SELECT 'prov' || i, 'openai_compatible', NULL, 'http://10.0.0.' || i || ':8000/v1' FROM generate_series(1, ${ENTITIES}) i`);
  await client.query(`INSERT INTO models (model_id, modality, provider_id, model_name)
    SELECT 'prov' || i || '/m' || i, 'llm', 'prov' || i, 'm' || i FROM generate_series(1, ${ENTITIES}) i`);
  await client.query(`INSERT INTO projects (project_id, name, daily_budget)
    SELECT 'proj' || i, 'Project ' || i, 100 FROM generate_series(1, ${ENTITIES}) i`);
  // 1M rows over the last 48 h: half inside the rolling 24 h window.
  await client.query(`INSERT INTO requests (id, ts, project, modality, model_id, provider, cost_usd, tenant_id)
    SELECT gen_random_uuid(), now() - (i % 172800) * interval '1 second', 'proj' || (i % ${ENTITIES} + 1), 'llm',
           'prov' || (i % 7 + 1) || '/m' || (i % 7 + 1), 'prov' || (i % 7 + 1), (i % 1000) / 100000.0,
           CASE WHEN i % 2 = 0 THEN 'acme' ELSE NULL END
      FROM generate_series(1, ${ROWS}) i`);
  await client.query("ANALYZE");
}

/**
 * Times two operations interleaved (a, b, a, b…) so both see the same background load: the
 * machine is shared with other builds, and load drifts over seconds.
 */
async function timePair(n: number, a: (i: number) => Promise<void>, b: (i: number) => Promise<void>): Promise<[number[], number[]]> {
  for (let i = 0; i < WARMUP; i++) {
    await a(i);
    await b(i);
  }
  const ta: number[] = [];
  const tb: number[] = [];
  for (let i = 0; i < n; i++) {
    let t0 = performance.now();
    await a(i);
    ta.push(performance.now() - t0);
    t0 = performance.now();
    await b(i);
    tb.push(performance.now() - t0);
  }
  return [ta, tb];
}

const PROJECT_SQL = `SELECT CASE WHEN grouping(provider) = 0 THEN 'provider' WHEN grouping(model_id) = 0 THEN 'model' ELSE 'total' END AS kind,
  coalesce(provider, model_id) AS key, round(coalesce(sum(cost_usd), 0), 10)::text AS cost, count(*) AS n
  FROM requests WHERE ts >= $1 AND project = $2 GROUP BY GROUPING SETS ((provider), (model_id), ())`;

async function main() {
  const bench = await createBenchDatabase("manage");
  const client = new pg.Client({ connectionString: bench.url });
  try {
    const database = await openDatabase({ url: bench.url });
    await runMigrations(database);
    await client.connect();
    const t0 = performance.now();
    await seed(client);
    process.stdout.write(`seeded ${ENTITIES} providers/models/projects and ${ROWS.toLocaleString("en-US")} requests in ${Math.round(performance.now() - t0)} ms\n`);

    const services = createServices({ database, config: configSchema.parse({}), env: parseEnv({}), log: silentLogger });
    const app = createApp(services);
    const server = serve({ fetch: app.fetch, port: 0, hostname: "127.0.0.1" });
    await new Promise((r) => server.once("listening", r));
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const get = async (path: string) => {
      const res = await request(base + path);
      if (res.statusCode !== 200) throw new Error(`${path}: HTTP ${res.statusCode}`);
      await res.body.text();
    };

    const since = () => new Date(Date.now() - 86_400_000);
    const [detail, detailSql] = await timePair(
      ITERATIONS,
      (i) => get(`/v1/projects/proj${(i % ENTITIES) + 1}`),
      async (i) => {
        await client.query(PROJECT_SQL, [since(), `proj${(i % ENTITIES) + 1}`]);
      },
    );
    const [status, statusSql] = await timePair(
      ITERATIONS,
      () => get("/v1/status"),
      async () => {
        await client.query("SELECT provider_id, provider_type, api_key_encrypted IS NOT NULL AS k FROM providers");
        await client.query("SELECT model_id FROM models");
        await client.query("SELECT project_id FROM projects");
      },
    );
    const cases = {
      "GET /v1/projects/{id}": detail,
      "raw SQL (project detail)": detailSql,
      "GET /v1/status": status,
      "raw SQL (status)": statusSql,
    };
    const s = Object.fromEntries(Object.entries(cases).map(([k, v]) => [k, summarizeSamples(v)]));
    const line = (name: string, raw: string) => {
      const a = s[name];
      const b = s[raw];
      if (!a || !b) return;
      process.stdout.write(
        `${name.padEnd(24)} p50 ${a.p50.toFixed(2)} ms  p95 ${a.p95.toFixed(2)} ms | ${raw}: p50 ${b.p50.toFixed(2)} ms  p95 ${b.p95.toFixed(2)} ms | ratio p50 ${(a.p50 / b.p50).toFixed(2)}x  p95 ${(a.p95 / b.p95).toFixed(2)}x\n`,
      );
    };
    process.stdout.write(`${ITERATIONS} sequential requests each, interleaved with the raw SQL, after ${WARMUP} warm-up, loopback HTTP, Postgres 127.0.0.1\n`);
    line("GET /v1/projects/{id}", "raw SQL (project detail)");
    line("GET /v1/status", "raw SQL (status)");
    await new Promise<void>((r) => server.close(() => r()));
    await database.close();
  } finally {
    await client.end().catch(() => {});
    await bench.drop();
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`${String(err)}\n`);
  process.exit(1);
});
