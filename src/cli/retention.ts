import cliProgress from "cli-progress";
import type { Command } from "commander";
import { applyRetention } from "../retention/apply.js";
import { retentionHorizons } from "../retention/horizons.js";
import { planRetention } from "../retention/plan.js";
import { printJson } from "./output.js";
import { withStore } from "./store.js";

/**
 * `voxgate retention plan|apply`: the same configuration (retention, projects.<id>.retention_days)
 * and database as `serve`. plan writes nothing; apply removes what plan lists (docs/operations.md).
 */
export function registerRetention(program: Command): void {
  const retention = program.command("retention").description("what retention removes (plan, a dry run) and removing it (apply)");

  retention
    .command("plan")
    .description("per table and UTC day, the rows (and estimated bytes) past the horizons, and each project's shorter-horizon deletes; writes nothing")
    .action(async () => {
      await withStore(async ({ database, config }) => printJson(await planRetention(database.db, retentionHorizons(config))));
    });

  retention
    .command("apply")
    .description("remove the rows past the horizons now, in batches (skipped if a server replica is applying it)")
    .option("--batch <n>", "rows per delete batch", (v) => Number.parseInt(v, 10), 5000)
    .option("--no-progress", "no progress bar")
    .action(async (o: { batch: number; progress: boolean }) => {
      await withStore(async ({ database, config }) => {
        const horizons = retentionHorizons(config);
        const plan = await planRetention(database.db, horizons);
        const bar = o.progress
          ? new cliProgress.SingleBar({ stream: process.stderr, format: "retention [{bar}] {value}/{total} rows {percentage}% {table}" }, cliProgress.Presets.shades_classic)
          : null;
        bar?.start(plan.total_rows, 0, { table: "" });
        let done = 0;
        const result = await applyRetention(database, horizons, {
          batchRows: o.batch > 0 ? o.batch : 5000,
          onBatch: (p) => {
            done += p.deleted;
            // Rows written meanwhile may make the run remove more than planned.
            if (bar && done > plan.total_rows) bar.setTotal(done);
            bar?.update(done, { table: p.scope === "*" ? p.table : `${p.table} (${p.scope})` });
          },
        });
        bar?.stop();
        if (!result.ran) process.stderr.write("another process is applying retention (advisory lock held): nothing done\n");
        printJson(result);
      });
    });
}
