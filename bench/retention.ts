/**
 * bench:retention: removing one day of 1M request rows while ingest batches keep arriving, two ways in
 * one run: (1) the day in its own day partition, dropped whole (DETACH under a short lock timeout, then
 * DROP: src/retention/drop.ts); (2) the same day's rows in the default partition, removed with the
 * batched deletes (what ran before day partitions, and what still removes a default partition's rows).
 * Figures: each removal's time and rows/s; the p50/p99/max latency of 500-record ingest batches
 * (ingest's request store with the projections src/compose.ts wires: the collector's write path, over
 * their own connections) WHILE each runs, against
 * the same batches' latency measured just before in the same run (baseline). Target for the drop:
 * < 1 s, and no batch waiting > 100 ms for it (its max latency vs the baseline's).
 *
 *   npm run bench:retention   (env: BENCH_ROWS=1000000, BENCH_DATABASE_URL / TEST_DATABASE_URL as the other benches)
 */
import { randomUUID } from "node:crypto";
import { execFileSync } from "node:child_process";
import { sql } from "drizzle-orm";
import { openDatabase } from "../src/db/client.js";
import type { RequestRow } from "../src/db/schema/requests.js";
import { runMigrations } from "../src/db/migrate.js";
import { ensureDayPartitions } from "../src/db/partitions.js";
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
    const horizons: RetentionHorizons = { now: new Date(), byClass: { raw: new Date(old + DAY), rollup: null, audit: null }, projects: [] };
    // The day to remove, seeded in bulk (its rollups do not matter to the removal).
    const seed = async () => {
      const t0 = performance.now();
      await database.db.execute(sql`INSERT INTO requests (id, ts, project, modality, model_id, provider, session_id, cost_usd, input_units, output_units)
        SELECT gen_random_uuid(), to_timestamp(${old / 1000} + (g % 86400)), 'bench', 'llm', 'openai/gpt-4.1-mini', 'openai', 'old-' || (g / 60), 0.000123, 350, 60
        FROM generate_series(1, ${ROWS}) g`);
      await database.db.execute(sql`VACUUM ANALYZE requests`);
      return (performance.now() - t0) / 1000;
    };
    const removeWhile = async () => {
      const during = writers(database.db);
      const a0 = performance.now();
      const result = await applyRetention(database, horizons);
      const ms = performance.now() - a0;
      await during.stop();
      const rows = result.deleted.requests ?? 0;
      const part = result.dropped.requests?.[0];
      return { rows_removed: rows, partition: part ? { detach_attempts: part.attempts, detach_and_drop_ms: part.ms } : null, apply_ms: Math.round(ms), rows_per_s: Math.round((rows / ms) * 1000), batch_ms: fmt(during.latencies) };
    };

    // (1) In its own day partition.
    await ensureDayPartitions(database.db, new Date(old), new Date(old));
    process.stdout.write(`seeded ${ROWS.toLocaleString()} rows into a day partition in ${(await seed()).toFixed(1)} s\n`);
    const base = writers(database.db);
    await new Promise((r) => setTimeout(r, 10_000));
    await base.stop();
    const drop = await removeWhile();
    // (2) The same day again, now without a partition: into the default one, batched deletes.
    process.stdout.write(`seeded ${ROWS.toLocaleString()} rows into the default partition in ${(await seed()).toFixed(1)} s\n`);
    const batched = await removeWhile();

    const b = fmt(base.latencies);
    const load = execFileSync("uptime").toString().trim();
    process.stdout.write(
      `${JSON.stringify(
        {
          baseline_batch_ms: b,
          drop: { ...drop, max_over_baseline_max_ms: Math.round(drop.batch_ms.max - b.max), p99_ratio: drop.batch_ms.p99 / b.p99 },
          batched_deletes: { ...batched, p99_ratio: batched.batch_ms.p99 / b.p99 },
          drop_vs_batched_time: drop.apply_ms / batched.apply_ms,
          load,
        },
        null,
        2,
      )}\n`,
    );
  } finally {
    await database.close();
    await bench.drop();
  }
}

await main();
