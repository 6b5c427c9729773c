/**
 * bench:sessions — p50/p95 of GET /v1/sessions (first page) and GET /v1/rooms/{room}/latency over
 * real loopback HTTP, on a fresh Postgres database holding 1M requests / 100k sessions / 500k turns
 * (INSERT … SELECT generate_series), against the equivalent raw SQL in the same run. Target: < 50 ms p95.
 *
 *   npm run bench:sessions            (TEST_DATABASE_URL picks the server; default 127.0.0.1:5432/test)
 */
import type { AddressInfo } from "node:net";
import { serve, type ServerType } from "@hono/node-server";
import pg from "pg";
import { request } from "undici";
import { parseEnv } from "../src/config/env.js";
import { parseConfigText } from "../src/config/load.js";
import { openDatabase } from "../src/db/client.js";
import { runMigrations } from "../src/db/migrate.js";
import { createApp } from "../src/http/app.js";
import { silentLogger } from "../src/logging.js";
import { createServices } from "../src/compose.js";

const ADMIN_URL = process.env.TEST_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test";
const SESSIONS = 100_000;
const TURNS_PER_SESSION = 5;
const REQUESTS_PER_SESSION = 10;
const TENANTS = 10;
const WARMUP = 20;
const ITERATIONS = 300;
const TARGET_P95_MS = 50;
const TENANT_KEY = "bench-tenant-key-0123456789";

function percentile(sorted: number[], q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))] ?? Number.NaN;
}

async function measure(fn: (i: number) => Promise<void>): Promise<{ p50: number; p95: number }> {
  for (let i = 0; i < WARMUP; i++) await fn(i);
  const times: number[] = [];
  for (let i = 0; i < ITERATIONS; i++) {
    const t0 = performance.now();
    await fn(i);
    times.push(performance.now() - t0);
  }
  times.sort((a, b) => a - b);
  return { p50: percentile(times, 0.5), p95: percentile(times, 0.95) };
}

async function generate(client: pg.Client) {
  const t0 = performance.now();
  // Sessions: one room each, spread over the last ~28 hours, ten tenants.
  await client.query(`
    insert into sessions (id, tenant_id, project, room_name, started_at, ended_at, modalities, request_count, total_cost_usd)
    select 'sess-' || g, 'tenant-' || (g % ${TENANTS}), 'proj-' || (g % 7), 'room-' || g,
           now() - g * interval '1 second', now() - g * interval '1 second' + interval '3 minutes',
           array['stt','llm','tts'], ${REQUESTS_PER_SESSION}, round((random() * 0.5)::numeric, 10)
    from generate_series(1, ${SESSIONS}) g`);
  // Turns: five per session; half name the room themselves, half are found through their session.
  await client.query(`
    insert into turns (tenant_id, session_id, room_name, turn_index, seq, caller_speak_start_ms, caller_speak_end_ms,
                       agent_speak_start_ms, agent_speak_end_ms, response_speed_ms)
    select 'tenant-' || (s % ${TENANTS}), 'sess-' || s, case when t % 2 = 0 then 'room-' || s end, t, t + 1,
           1763700000000 + s * 1000 + t * 10000, 1763700000000 + s * 1000 + t * 10000 + 2000,
           case when t < 4 then 1763700000000 + s * 1000 + t * 10000 + 2700 end,
           case when t < 4 then 1763700000000 + s * 1000 + t * 10000 + 5000 end,
           case when t < 4 then 400 + (random() * 900)::int end
    from generate_series(1, ${SESSIONS}) s, generate_series(0, ${TURNS_PER_SESSION - 1}) t`);
  await client.query(`
    insert into requests (id, ts, tenant_id, project, session_id, room_name, modality, model_id, provider, ttfb_ms,
                          total_latency_ms, cost_usd, is_probe)
    select gen_random_uuid(), now() - s * interval '1 second', 'tenant-' || (s % ${TENANTS}), 'proj-' || (s % 7),
           'sess-' || s, 'room-' || s, (array['stt','llm','tts'])[r % 3 + 1],
           (array['deepgram/nova-3','openai/gpt-4.1-mini','cartesia/sonic'])[r % 3 + 1],
           (array['deepgram','openai','cartesia'])[r % 3 + 1],
           50 + random() * 600, 200 + random() * 1500, round((random() * 0.01)::numeric, 10), r = 9 and s % 50 = 0
    from generate_series(1, ${SESSIONS}) s, generate_series(0, ${REQUESTS_PER_SESSION - 1}) r`);
  await client.query(`
    insert into dead_air_events (tenant_id, session_id, room_name, started_at_ms, duration_ms, threshold_used_ms)
    select 'tenant-' || (s % ${TENANTS}), 'sess-' || s, 'room-' || s, 1763700000000 + s * 1000, 1500 + (random() * 4000)::int, 1500
    from generate_series(1, ${SESSIONS}) s where s % 3 = 0`);
  await client.query("analyze");
  return performance.now() - t0;
}

async function main() {
  const name = `voxgate_bench_sessions_${process.pid}`;
  const admin = new pg.Client({ connectionString: ADMIN_URL });
  await admin.connect();
  await admin.query(`drop database if exists ${name} with (force)`);
  await admin.query(`create database ${name}`);
  const url = new URL(ADMIN_URL);
  url.pathname = `/${name}`;
  const database = await openDatabase({ url: url.toString() });
  let server: ServerType | null = null;
  const raw = new pg.Client({ connectionString: url.toString() });
  try {
    await runMigrations(database);
    await raw.connect();
    const genMs = await generate(raw);
    process.stdout.write(`generated ${SESSIONS} sessions, ${SESSIONS * TURNS_PER_SESSION} turns, ${SESSIONS * REQUESTS_PER_SESSION} requests in ${(genMs / 1000).toFixed(1)} s\n`);

    const yaml = `auth:\n  api_keys:\n    - bench-operator-key-0123456789\n    - { key: ${TENANT_KEY}, scopes: [read], tenant_id: tenant-3 }\n`;
    const services = createServices({ database, config: parseConfigText(yaml, "bench.yaml", {}), env: parseEnv({}), log: silentLogger });
    const app = createApp(services);
    server = await new Promise<ServerType>((resolve) => {
      const s = serve({ fetch: app.fetch, port: 0, hostname: "127.0.0.1" }, () => resolve(s));
    });
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const get = async (path: string, key: string) => {
      const res = await request(`${base}${path}`, { headers: { authorization: `Bearer ${key}` } });
      if (res.statusCode !== 200) throw new Error(`${path}: HTTP ${res.statusCode}`);
      await res.body.text();
    };
    const room = (i: number) => `room-${(((i * 7919) % (SESSIONS / TENANTS)) * TENANTS + 3) || 3}`;

    const results: { name: string; http: { p50: number; p95: number }; sql: { p50: number; p95: number } }[] = [];
    for (const [label, key] of [
      ["operator", "bench-operator-key-0123456789"],
      ["tenant", TENANT_KEY],
    ] as const) {
      const tenantSql = label === "tenant" ? "where tenant_id = 'tenant-3'" : "";
      results.push({
        name: `GET /v1/sessions (first page, ${label})`,
        http: await measure(() => get("/v1/sessions", key)),
        sql: await measure(async () => {
          await raw.query(`select * from sessions ${tenantSql} order by started_at desc, id desc limit 101`);
        }),
      });
      const tenantAnd = label === "tenant" ? "and tenant_id = 'tenant-3'" : "";
      results.push({
        name: `GET /v1/rooms/{room}/latency (${label})`,
        http: await measure((i) => get(`/v1/rooms/${room(i)}/latency`, key)),
        sql: await measure(async (i) => {
          const r = room(i);
          // The same reads, as plain SQL: the room's turns, its requests' TTFB and its dead air.
          const cols = "id, seq, turn_index, session_id, caller_speak_end_ms, agent_speak_start_ms, response_speed_ms";
          const roomSessions = `select id from sessions where room_name = $1 ${tenantAnd}`;
          await raw.query(
            `select ${cols} from turns where room_name = $1 ${tenantAnd}
             union select ${cols} from turns where session_id in (${roomSessions}) ${tenantAnd} order by seq, id`,
            [r],
          );
          await raw.query(
            `select modality, ttfb_ms from requests where session_id in (${roomSessions})
             and ttfb_ms is not null and status <> 'error' and not is_probe ${tenantAnd}`,
            [r],
          );
          await raw.query(
            `select id, duration_ms from dead_air_events where room_name = $1 ${tenantAnd}
             union select id, duration_ms from dead_air_events where session_id in (${roomSessions}) ${tenantAnd}`,
            [r],
          );
        }),
      });
    }

    process.stdout.write(`\n${"".padEnd(46)}${"p50 ms".padStart(9)}${"p95 ms".padStart(9)}${"SQL p50".padStart(9)}${"SQL p95".padStart(9)}${"p95/SQL".padStart(9)}  target p95 < ${TARGET_P95_MS} ms\n`);
    for (const r of results) {
      const ratio = r.http.p95 / r.sql.p95;
      process.stdout.write(
        `${r.name.padEnd(46)}${r.http.p50.toFixed(2).padStart(9)}${r.http.p95.toFixed(2).padStart(9)}${r.sql.p50.toFixed(2).padStart(9)}${r.sql.p95.toFixed(2).padStart(9)}${`${ratio.toFixed(1)}x`.padStart(9)}  ${r.http.p95 < TARGET_P95_MS ? "ok" : "MISSED"}\n`,
      );
    }
  } finally {
    if (server) {
      const s = server;
      await new Promise<void>((r) => s.close(() => r()));
    }
    await raw.end().catch(() => {});
    await database.close();
    await admin.query(`drop database if exists ${name} with (force)`);
    await admin.end();
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`bench:sessions failed: ${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
