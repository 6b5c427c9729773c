/**
 * Times bench:agents' seeding phase by phase without measuring the endpoint (the seeding is what
 * gates a 10M-row run): request rows, index rebuild, sessions/calls/turns, rollups, then the
 * per-agent rollup rebuild alone again (its share of the rollup phase). Drops its database unless --keep.
 *   tsx bench/seed-phases.ts --rows 300000 [--agents 10000] [--keep]
 */
import { loadavg } from "node:os";
import { seedFleet } from "./agents-seed.js";
import { createBenchDatabase, parseRowsArg, SPAN_DAYS, seedBenchData } from "./generate.js";
import { nextMonthMs } from "../src/rollups/buckets.js";
import { rebuildFleetIndexRollups } from "../src/rollups/fleet-index-rebuild.js";

const DAY_MS = 86_400_000;
const i = process.argv.indexOf("--agents");
const agents = i >= 0 ? Number(process.argv[i + 1]) : 10_000;
const [rows = 300_000] = parseRowsArg(process.argv, [300_000]);
const load = () => loadavg().map((l) => l.toFixed(2)).join(" ");

async function main(): Promise<void> {
  const bench = await createBenchDatabase();
  try {
    console.log(`seed phases: ${rows} rows, ${agents} agents, load ${load()}`);
    const now = new Date();
    const t0 = Date.now();
    await seedBenchData(bench, rows, now, true, { agents, beforeRollups: seedFleet });
    console.log(`generated in ${((Date.now() - t0) / 1000).toFixed(1)} s, load ${load()}`);
    const end = now.getTime();
    const from = Math.floor((end - SPAN_DAYS * DAY_MS) / DAY_MS) * DAY_MS;
    const to = Math.ceil(end / DAY_MS) * DAY_MS + DAY_MS;
    const t1 = Date.now();
    for (let a = from; a < to; a = nextMonthMs(a)) await rebuildFleetIndexRollups(bench.database.db, new Date(a), new Date(Math.min(to, nextMonthMs(a))));
    console.log(`per-agent rollups alone (month slices, one at a time, server settings) in ${((Date.now() - t1) / 1000).toFixed(1)} s, load ${load()}`);
  } finally {
    if (process.argv.includes("--keep")) {
      console.log(`kept database: ${bench.url}`);
      await bench.database.close();
    } else await bench.drop();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
