/**
 * bench:retention: removing one day of 1M request rows with retention's batched deletes while ingest
 * batches keep arriving. Figures: the time to remove the day and rows/s; the p50/p99/max latency of
 * 500-record ingest batches (ingest's request store with the projections src/compose.ts wires: the
 * collector's write path, over their own connections)
 * WHILE the day is removed, against the same batches' latency measured just before in the same run
 * (baseline). Day partitions (DETACH … CONCURRENTLY + DROP) are not built: this measures what runs.
 *
 *   npm run bench:retention   (env: BENCH_ROWS=1000000, BENCH_DATABASE_URL / TEST_DATABASE_URL as the other benches)
 */
import { randomUUID } from "node:crypto";
import { execFileSync } from "node:child_process";
import { sql } from "drizzle-orm";
import { openDatabase } from "../src/db/client.js";
import type { RequestRow } from "../src/db/schema/requests.js";
import { runMigrations } from "../src/db/migrate.js";
import { requestProjections } from "../src/compose.js";
import { createRequestStore } from "../src/ingest/store-requests.js";
import { applyRetention } from "../src/retention/apply.js";
import type { RetentionHorizons } from "../src/retention/horizons.js";
import { summarizeSamples } from "../src/stats/summary.js";
import { createBenchDatabase } from "./support.js";

const requestStore = createRequestStore(requestProjections());
const ROWS = Number(process.env.BENCH_ROWS ?? 1_000_000);
const BATCH = 500;
const WRITERS = 2;
const DAY = 86_400_000;

function batch(): RequestRow[] {
  const session = `bench-${randomUUID()}`;
  return Array.from({ length: BATCH }, (_, i) => ({
    id: randomUUID(),
    ts: new Date(),
    modality: "llm",
    model_id: "openai/gpt-4.1-mini",
    provider: "openai",
    project: "bench",
    session_id: session,
    agent_id: "bench-agent",
    ttfb_ms: 120 + (i % 50),
    total_latency_ms: 400 + (i % 200),
    cost_usd: "0.000123",
    input_units: 350,
    output_units: 60,
  }));
}

/** Writers posting batches until `stop()`; each batch's latency in ms. */
function writers(db: Awaited<ReturnType<typeof openDatabase>>["db"]) {
  const latencies: number[] = [];
  let running = true;
  const loops = Array.from({ length: WRITERS }, async () => {
    while (running) {
      const b = batch();
      const t0 = performance.now();
      await requestStore.store(db, null, b);
      latencies.push(performance.now() - t0);
    }
  });
  return {
    latencies,
    async stop() {
      running = false;
      await Promise.all(loops);
    },
  };
}

const fmt = (xs: number[]) => {
  const s = summarizeSamples(xs);
  return { n: xs.length, p50: s?.p50 ?? 0, p99: s?.p99 ?? 0, max: s?.max ?? 0 };
};

async function main() {
  const bench = await createBenchDatabase("retention");
  const database = await openDatabase({ url: bench.url });
  try {
    await runMigrations(database);
    const old = Math.floor(Date.now() / DAY) * DAY - 100 * DAY;
    const t0 = performance.now();
    // The day to remove, seeded in bulk (its rollups do not matter to the delete).
    await database.db.execute(sql`INSERT INTO requests (id, ts, project, modality, model_id, provider, session_id, cost_usd, input_units, output_units)
      SELECT gen_random_uuid(), to_timestamp(${old / 1000} + (g % 86400)), 'bench', 'llm', 'openai/gpt-4.1-mini', 'openai', 'old-' || (g / 60), 0.000123, 350, 60
      FROM generate_series(1, ${ROWS}) g`);
    await database.db.execute(sql`VACUUM ANALYZE requests`);
    process.stdout.write(`seeded ${ROWS.toLocaleString()} rows of one day in ${((performance.now() - t0) / 1000).toFixed(1)} s\n`);

    const base = writers(database.db);
    await new Promise((r) => setTimeout(r, 10_000));
    await base.stop();

    const during = writers(database.db);
    const horizons: RetentionHorizons = { now: new Date(), byClass: { raw: new Date(old + DAY), rollup: null, audit: null }, projects: [] };
    const a0 = performance.now();
    const result = await applyRetention(database, horizons);
    const applyMs = performance.now() - a0;
    await during.stop();

    const b = fmt(base.latencies);
    const d = fmt(during.latencies);
    const load = execFileSync("uptime").toString().trim();
    process.stdout.write(
      `${JSON.stringify({ rows_removed: result.deleted.requests, apply_ms: Math.round(applyMs), rows_per_s: Math.round(((result.deleted.requests ?? 0) / applyMs) * 1000), baseline_batch_ms: b, during_batch_ms: d, p99_ratio: d.p99 / b.p99, load }, null, 2)}\n`,
    );
  } finally {
    await database.close();
    await bench.drop();
  }
}

await main();
