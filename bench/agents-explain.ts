/**
 * bench:agents:explain — EXPLAIN (ANALYZE, BUFFERS) of every statement GET /api/agents runs, per
 * period, against a database kept by `npm run bench:agents -- --keep`: execution time per statement,
 * and with --plans the plans themselves. Migrates the database first; --rebuild then rebuilds the
 * per-agent rollups over the data (a database seeded before a new grain existed).
 * --timing-off measures without per-node timing (EXPLAIN ANALYZE's clock reads double a 10k-row plan's time here).
 *   npm run bench:agents:explain -- <url> [--rebuild] [--plans] [--timing-off] [--period month] [--runs 3]
 */
import { type SQL, sql } from "drizzle-orm";
import { PgDialect } from "drizzle-orm/pg-core";
import { type Db, openDatabase, queryRows } from "../src/db/client.js";
import { runMigrations } from "../src/db/migrate.js";
import { fleetIndex } from "../src/fleet/index-queries.js";
import { COST_PERIODS, type Period } from "../src/reports/window.js";
import { rebuildFleetIndexRollups } from "../src/rollups/fleet-index-rebuild.js";

const DAY_MS = 86_400_000;
const url = process.argv[2];
if (!url?.startsWith("postgres")) throw new Error("usage: bench/agents-explain.ts <postgres url> [--rebuild] [--plans] [--period p] [--runs n]");
const flag = (name: string) => process.argv.includes(name);
const opt = (name: string) => {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1] : undefined;
};

const dialect = new PgDialect();

/**
 * A Db whose execute records each statement instead of only running it (fleetIndex's reads are plain
 * SELECTs), inside its transactions too (the ranking runs in one, for its SET LOCAL). SET statements
 * are run, not recorded: EXPLAIN of a statement is taken in a transaction with the same SET LOCALs.
 */
function recording(db: Db, seen: { q: SQL; sets: SQL[] }[], sets: SQL[] = []): Db {
  return new Proxy(db, {
    get(target, prop, receiver) {
      if (prop === "transaction") {
        return (fn: (tx: Db) => Promise<unknown>) => target.transaction((tx) => fn(recording(tx as unknown as Db, seen, [])));
      }
      if (prop !== "execute") return Reflect.get(target, prop, receiver);
      return (q: SQL) => {
        if (/^\s*SET LOCAL/i.test(dialect.sqlToQuery(q).sql)) sets.push(q);
        else seen.push({ q, sets: [...sets] });
        return target.execute(q);
      };
    },
  });
}

async function main(): Promise<void> {
  const database = await openDatabase({ url: url ?? "" });
  await runMigrations(database);
  const db = database.db;
  if (flag("--rebuild")) {
    const [span] = await queryRows<{ lo: Date | null; hi: Date | null }>(db, sql`SELECT min(ts) AS lo, max(ts) AS hi FROM requests`);
    if (span?.lo && span.hi) {
      const from = new Date(Math.floor(new Date(span.lo).getTime() / DAY_MS) * DAY_MS);
      const to = new Date(Math.ceil(new Date(span.hi).getTime() / DAY_MS) * DAY_MS + DAY_MS);
      const t0 = Date.now();
      await rebuildFleetIndexRollups(db, from, to);
      console.log(`rebuilt per-agent rollups ${from.toISOString()} .. ${to.toISOString()} in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
    }
  }
  const periods = opt("--period") ? [opt("--period") as Period] : [...COST_PERIODS];
  const runs = Number(opt("--runs") ?? 3);
  for (const period of periods) {
    const seen: { q: SQL; sets: SQL[] }[] = [];
    const now = new Date();
    await fleetIndex(recording(db, seen), { tenantId: null, period, limit: 100, offset: 0, sort: "cost", now });
    console.log(`-- period=${period}: ${seen.length} statements`);
    for (const [i, { q, sets }] of seen.entries()) {
      const times: string[] = [];
      let plan: string[] = [];
      for (let r = 0; r < runs; r++) {
        const rows = await db.transaction(async (tx) => {
          for (const set of sets) await tx.execute(set);
          return queryRows<{ "QUERY PLAN": string }>(tx, sql`EXPLAIN (ANALYZE, BUFFERS${sql.raw(flag("--timing-off") ? ", TIMING OFF" : "")}) ${q}`);
        });
        plan = rows.map((x) => x["QUERY PLAN"]);
        const planning = plan.find((l) => l.startsWith("Planning Time"))?.replace(/Planning Time: /, "") ?? "?";
        times.push(`${plan.find((l) => l.startsWith("Execution Time"))?.replace(/Execution Time: /, "") ?? "?"} (+${planning} planning)`);
      }
      console.log(`  #${i + 1} execution ${times.join(" · ")}`);
      if (flag("--plans")) console.log(plan.map((l) => `     ${l}`).join("\n"));
    }
  }
  await database.close();
}

await main();
