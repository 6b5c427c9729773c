/**
 * bench data generator: N request rows spread over the trailing year, then their hourly and daily
 * rollups, all in SQL (INSERT … SELECT generate_series in chunks, rebuildRollups per calendar month, two at a time),
 * into a fresh Postgres database. Used by bench/read.ts; runnable alone:
 *   tsx bench/generate.ts --rows 1000000 [--keep]
 */
import { randomBytes } from "node:crypto";
import { pathToFileURL } from "node:url";
import { SingleBar } from "cli-progress";
import { sql } from "drizzle-orm";
import pg from "pg";
import { type Database, openDatabase } from "../src/db/client.js";
import { runMigrations } from "../src/db/migrate.js";
import { createPartitionSql, dayStart, PARTITIONED_TABLES } from "../src/db/partitions.js";
import { nextMonthMs } from "../src/rollups/buckets.js";
import { FLEET_INDEX_GRAINS } from "../src/rollups/fleet-index.js";
import { rebuildRollups } from "../src/rollups/rebuild.js";

export const ADMIN_URL = process.env.BENCH_DATABASE_URL ?? process.env.TEST_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test";
const DAY_MS = 86_400_000;
export const SPAN_DAYS = 365;
const CHUNK_ROWS = 250_000;
/** Request chunks inserted, indexes built and rollup slices rebuilt at once: the machine this runs on has two cores. */
const SEED_WORKERS = 2;
/** Runs fn over items, SEED_WORKERS at a time (each on its own pooled connection). */
async function eachAtOnce<T>(items: readonly T[], fn: (item: T) => Promise<unknown>): Promise<void> {
  const queue = [...items];
  const worker = async () => {
    for (let item = queue.shift(); item !== undefined; item = queue.shift()) await fn(item);
  };
  await Promise.all(Array.from({ length: SEED_WORKERS }, worker));
}

/** Analyzed before the rollups are rebuilt when a hook made sessions, calls and turns (the per-agent rebuild joins them), not again after. */
const ANALYZED_FIRST = ["requests", "sessions", "calls", "turns"];

export interface BenchDatabase {
  url: string;
  name: string;
  database: Database;
  drop(): Promise<void>;
}

export async function createBenchDatabase(): Promise<BenchDatabase> {
  const name = `voxgate_bench_${randomBytes(4).toString("hex")}`;
  const admin = new pg.Client({ connectionString: ADMIN_URL });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  return openBenchDatabase(name);
}

/**
 * A bench database by name, created here or kept by an earlier run (`--keep`), migrated to this
 * tree's schema (a database kept before a schema change needs the new tables; rebuild their rollups
 * with rebuildRollups).
 */
export async function openBenchDatabase(name: string): Promise<BenchDatabase> {
  if (!/^voxgate_bench_[a-z0-9_]+$/.test(name)) throw new Error(`not a bench database name: ${name}`);
  const u = new URL(ADMIN_URL);
  u.pathname = `/${name}`;
  const database = await openDatabase({ url: u.toString() });
  await runMigrations(database);
  return {
    url: u.toString(),
    name,
    database,
    async drop() {
      await database.close();
      const a = new pg.Client({ connectionString: ADMIN_URL });
      await a.connect();
      await a.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await a.end();
    },
  };
}

/**
 * Brings a kept database's year up to `now`: rows from its newest row to now at the year's density
 * (what the server would have received meanwhile), and every rollup of the days they fall in rebuilt.
 * A window ending at now then reads as many edge rows as on a fresh seed. Returns the request rows.
 */
export async function topUpBenchData(bench: BenchDatabase, now: Date): Promise<number> {
  const db = bench.database.db;
  const r = (await db.execute(sql`SELECT count(*)::bigint AS n, extract(epoch FROM max(ts)) * 1000 AS last FROM requests`)) as unknown as {
    rows: { n: string; last: string | null }[];
  };
  const rows = Number(r.rows[0]?.n ?? 0);
  const last = Number(r.rows[0]?.last ?? Number.NaN);
  const end = now.getTime();
  if (rows === 0 || !Number.isFinite(last) || last >= end) return rows;
  const n = Math.round((rows * (end - last)) / (SPAN_DAYS * DAY_MS));
  await createSpanPartitions(db, last, end);
  if (n > 0) await insertRequestRows(db, n, last, end, 0);
  await rebuildRollups(db, new Date(dayStart(last)), new Date(dayStart(end) + DAY_MS));
  await db.execute(sql`ANALYZE request_rollups, request_rollups_daily, request_model_rollups, request_model_rollups_daily`);
  return rows + n;
}

// 2 tenants × 3 projects × 6 models (2 per modality) × probe 5%: the bucket count is fixed by
// these dimensions and the span, whatever the row count.
const MODELS_SQL = `(ARRAY['openai/gpt-4.1-mini','anthropic/claude-haiku','deepgram/nova-3','openai/whisper-1','elevenlabs/eleven_flash_v2_5','cartesia/sonic'])`;

/**
 * Drops the tables' non-unique indexes (a bulk load builds them once after, as a restore does, not
 * row by row); returns their definitions to build them again. pg_indexes spells a partitioned table's
 * index `ON ONLY`, which would build an invalid parent index and none on the partitions: the
 * definitions returned leave ONLY out, so each recurses into every partition (what the migration made).
 */
export async function dropSecondaryIndexes(db: Database["db"], tables: readonly string[]): Promise<string[]> {
  const rows = (await db.execute(
    sql`SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = 'public' AND tablename = ANY(${`{${tables.join(",")}}`}::text[])
          AND indexdef NOT LIKE 'CREATE UNIQUE INDEX%'`,
  )) as unknown as { rows: { indexname: string; indexdef: string }[] };
  for (const r of rows.rows) await db.execute(sql.raw(`DROP INDEX ${r.indexname}`));
  return rows.rows.map((r) => r.indexdef.replace(" ON ONLY ", " ON "));
}

/**
 * The span's day partitions of every partitioned table, as a server that ran all year has them, one
 * statement per table (createPartitionSql per day in a DO block): 1,830 partitions one short
 * transaction each (ensureDayPartitions, the server's way for a few days ahead) took 80 s.
 */
async function createSpanPartitions(db: Database["db"], from: number, to: number): Promise<number> {
  let n = 0;
  for (const t of PARTITIONED_TABLES) {
    const ddl: string[] = [];
    for (let day = dayStart(from); day <= dayStart(to); day += DAY_MS) ddl.push(`EXECUTE $ddl$${createPartitionSql(t, day)}$ddl$;`);
    await db.execute(sql.raw(`DO $do$BEGIN ${ddl.join(" ")} END$do$`));
    n += ddl.length;
  }
  return n;
}

/** Optional shape of the generated traffic (bench/agents.ts): agent-attributed rows and extra data folded by the rollups. */
export interface BenchDataOptions {
  /** When > 0, every row belongs to one of this many agents (uniform), whose tenant is fixed, in 10-minute sessions. */
  agents?: number;
  /** Runs after the request rows are in (before their secondary indexes are built) and before the rollups are rebuilt. */
  beforeRollups?: (db: Database["db"]) => Promise<void>;
}

/**
 * `n` request rows with timestamps uniform over [fromMs, toMs), inserted sorted: rows land on disk in
 * time order as real traffic does (an hour's rows share pages). `agents` > 0: every row belongs to one
 * of that many agents (BenchDataOptions.agents).
 */
async function insertRequestRows(db: Database["db"], n: number, fromMs: number, toMs: number, agents: number): Promise<void> {
  await db.execute(sql`INSERT INTO requests (id, ts, tenant_id, project, modality, model_id, provider, status,
      ttfb_ms, total_latency_ms, cost_usd, rated_price_usd, pricing, input_units, output_units, is_probe, agent_id, session_id)
    SELECT gen_random_uuid(), ts, CASE WHEN a IS NULL THEN tenant ELSE (ARRAY['acme','globex'])[1 + a % 2] END, project, (ARRAY['llm','llm','stt','stt','tts','tts'])[m], ${sql.raw(MODELS_SQL)}[m],
      split_part(${sql.raw(MODELS_SQL)}[m], '/', 1), CASE WHEN u < 0.02 THEN 'error' ELSE 'success' END,
      ttfb, ttfb * (2 + 3 * random()), round((0.0001 + random() * 0.02)::numeric, 10), round((0.0002 + random() * 0.03)::numeric, 10),
      'priced', round(random() * 2000), round(random() * 500), u > 0.95,
      'agent-' || lpad(a::text, 5, '0'), 'sess-' || a || '-' || floor(extract(epoch FROM ts) / 600)::bigint
    FROM (
      SELECT to_timestamp((${fromMs} + random() * ${toMs - fromMs}) / 1000.0) AS ts,
        (ARRAY['acme','globex'])[1 + floor(random() * 2)::int] AS tenant,
        (ARRAY['default','support','sales'])[1 + floor(random() * 3)::int] AS project,
        1 + floor(random() * 6)::int AS m, random() AS u,
        CASE WHEN ${agents} > 0 THEN floor(random() * ${agents})::int END AS a,
        -- log-normal latencies around 300 ms: what a voice pipeline's TTFB looks like
        300 * exp(0.4 * sqrt(-2 * ln(1 - random())) * cos(2 * pi() * random())) AS ttfb
      FROM generate_series(1, ${n})
    ) g ORDER BY ts`);
}

/** Inserts `rows` request rows in chunks, then rollups; `now` is the end of the generated span. */
export async function generateBenchData(database: Database, rows: number, now: Date, log = true, opts: BenchDataOptions = {}): Promise<void> {
  const agents = Math.max(0, Math.floor(opts.agents ?? 0));
  const db = database.db;
  const bar = log ? new SingleBar({ format: "  requests [{bar}] {percentage}% {value}/{total} rows {duration}s" }) : null;
  const end = now.getTime();
  let t = Date.now();
  const lap = (what: string) => {
    const at = Date.now();
    if (log) console.log(`  ${what} in ${((at - t) / 1000).toFixed(1)} s`);
    t = at;
  };
  // Secondary indexes are built once after the bulk load (what a restore does), not row by row; the
  // day partitions made meanwhile get them then (the definitions recurse).
  const secondaryIndexes = await dropSecondaryIndexes(db, PARTITIONED_TABLES.map((p) => p.table));
  // The span's day partitions exist before its rows arrive, as they do on a server that ran all year
  // (it creates them ahead): rows of the past year would otherwise all land in the default partition.
  lap(`${await createSpanPartitions(db, end - SPAN_DAYS * DAY_MS, end)} day partitions created`);
  bar?.start(rows, 0);
  let inserted = 0;
  const chunks: number[] = [];
  for (let done = 0; done < rows; done += CHUNK_ROWS) chunks.push(done);
  const insertChunk = async (done: number) => {
    const n = Math.min(CHUNK_ROWS, rows - done);
    // Each chunk fills its own slice of the span (oldest first): two chunks at once fill different
    // slices (a boundary day at most in common), no lock between them.
    const sliceStart = end - SPAN_DAYS * DAY_MS + (SPAN_DAYS * DAY_MS * done) / rows;
    await insertRequestRows(db, n, sliceStart, sliceStart + (SPAN_DAYS * DAY_MS * n) / rows, agents);
    inserted += n;
    bar?.update(inserted);
  };
  await eachAtOnce(chunks, insertChunk);
  bar?.stop();
  lap("requests inserted");
  // The derived data is read from and written to requests in bulk: before its indexes exist.
  if (opts.beforeRollups) {
    await opts.beforeRollups(db);
    lap("beforeRollups");
  }
  await eachAtOnce(secondaryIndexes, (def) => db.execute(sql.raw(def)));
  lap("secondary indexes of the partitioned tables rebuilt");
  // With sessions, calls and turns made by the hook, statistics before the rollups read the fresh
  // tables (autovacuum has not seen them yet): without them the per-agent rebuild's joins are planned
  // for empty tables. Plain request rows' rollups are one scan per month slice: analyzed once, at the
  // end (the 366 partitions of 10M rows took 170 s on a loaded machine).
  const analyzedFirst = opts.beforeRollups ? ANALYZED_FIRST : [];
  if (analyzedFirst.length > 0) {
    await db.execute(sql.raw(`ANALYZE ${analyzedFirst.join(", ")}`));
    lap("ANALYZE before rollups");
  }
  const from = Math.floor((end - SPAN_DAYS * DAY_MS) / DAY_MS) * DAY_MS;
  const to = Math.ceil(end / DAY_MS) * DAY_MS + DAY_MS;
  // One slice per calendar month: the per-agent month grain is rebuilt whole per slice, so month
  // slices read each month once and never share a month bucket, which lets two run at once (one per core).
  const slices: [number, number][] = [];
  for (let a = from; a < to; a = nextMonthMs(a)) slices.push([a, Math.min(to, nextMonthMs(a))]);
  // The per-agent tables' lookup indexes are built once after their bulk rebuild (their keys stay).
  const rollupIndexes = await dropSecondaryIndexes(db, FLEET_INDEX_GRAINS.map((g) => g.table));
  const rbar = log ? new SingleBar({ format: "  rollups  [{bar}] {percentage}% {value}/{total} slices {duration}s" }) : null;
  rbar?.start(slices.length, 0);
  let built = 0;
  await eachAtOnce(slices, async ([a, b]) => {
    await rebuildRollups(db, new Date(a), new Date(b));
    rbar?.update(++built);
  });
  rbar?.stop();
  lap("rollups rebuilt");
  for (const def of rollupIndexes) await db.execute(sql.raw(def));
  lap("per-agent rollup indexes rebuilt");
  // Every table not analyzed above (those have not changed since: analyzing a year of partitions
  // again was 40% of a 1M-row seed).
  const rest = (await db.execute(
    sql`SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p') AND NOT c.relispartition AND c.relname <> ALL(${`{${analyzedFirst.join(",")}}`}::text[])`,
  )) as unknown as { rows: { relname: string }[] };
  await db.execute(sql.raw(`ANALYZE ${rest.rows.map((r) => `"${r.relname}"`).join(", ")}`));
  lap("ANALYZE");
}

/**
 * Session settings of the seeding connections only (the served database keeps the server's): sorts
 * and hash aggregates of the bulk statements in memory instead of spilling, index builds in one pass,
 * no flush wait per commit (a crash mid-seed loses the seed, not committed data of anyone else).
 */
const SEEDING_OPTIONS = "-c work_mem=256MB -c maintenance_work_mem=1GB -c synchronous_commit=off";

/** generateBenchData over its own pool with SEEDING_OPTIONS, closed afterwards. */
export async function seedBenchData(bench: Pick<BenchDatabase, "url">, rows: number, now: Date, log = true, opts: BenchDataOptions = {}): Promise<void> {
  const u = new URL(bench.url);
  u.searchParams.set("options", SEEDING_OPTIONS);
  const seeding = await openDatabase({ url: u.toString() });
  try {
    await generateBenchData(seeding, rows, now, log, opts);
  } finally {
    await seeding.close();
  }
}

export function parseRowsArg(argv: string[], dflt: number[]): number[] {
  const i = argv.indexOf("--rows");
  const v = i >= 0 ? argv[i + 1] : undefined;
  if (!v) return dflt;
  const out = v.split(",").map((s) => Number(s.replace(/_/g, "")));
  if (out.some((n) => !Number.isInteger(n) || n <= 0 || n > 50_000_000)) throw new Error(`--rows wants positive integers up to 50M, got ${v}`);
  return out;
}

async function main() {
  const [rows] = parseRowsArg(process.argv, [1_000_000]);
  const bench = await createBenchDatabase();
  const t0 = Date.now();
  await seedBenchData(bench, rows ?? 1_000_000, new Date());
  console.log(`generated ${rows} rows + rollups in ${((Date.now() - t0) / 1000).toFixed(1)} s into ${bench.url}`);
  if (process.argv.includes("--keep")) await bench.database.close();
  else await bench.drop();
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  main().catch((err) => {
    console.error(err);
    process.exit(1);
  });
}
