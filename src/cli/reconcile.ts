import { readFileSync } from "node:fs";
import { basename } from "node:path";
import { type Command, InvalidArgumentError, Option } from "commander";
import { parseUsageFile, RECONCILE_PROVIDERS, type ReconcileProvider, ReconcileInputError, reconcile } from "../billing/reconcile.js";
import { recordedByModel } from "../billing/usage.js";
import { printJson } from "./output.js";
import { withStore } from "./store.js";

function parseDate(value: string): Date {
  const d = new Date(value);
  if (!/^\d{4}-\d{2}-\d{2}/.test(value) || Number.isNaN(d.getTime())) throw new InvalidArgumentError("expected an ISO date, e.g. 2026-10-01");
  return d;
}

/** `voxgate reconcile --provider openai|deepgram|elevenlabs --provider-usage-file FILE [--from] [--to]`. */
export function registerReconcile(program: Command): void {
  program
    .command("reconcile")
    .description("compare recorded costs (cost_usd) with a provider usage export (CSV with header, or JSON array)")
    .addOption(new Option("--provider <type>", "provider export type").choices([...RECONCILE_PROVIDERS]).makeOptionMandatory())
    .requiredOption("--provider-usage-file <file>", "the export: .csv or .json")
    .option("--from <date>", "only requests at or after this ISO date (default: all recorded)", parseDate)
    .option("--to <date>", "only requests before this ISO date", parseDate)
    .action(async (o: { provider: ReconcileProvider; providerUsageFile: string; from?: Date; to?: Date }) => {
      let rows: ReturnType<typeof parseUsageFile>;
      try {
        rows = parseUsageFile(o.provider, basename(o.providerUsageFile), readFileSync(o.providerUsageFile, "utf8"));
      } catch (err) {
        const message = err instanceof ReconcileInputError ? err.message : `cannot read ${o.providerUsageFile}: ${(err as Error).message}`;
        process.stderr.write(`voxgate: ${message}\n`);
        process.exit(2);
      }
      await withStore(async ({ database }) => {
        const recorded = await recordedByModel(database.db, { provider: o.provider, from: o.from ?? null, to: o.to ?? null });
        const report = reconcile(o.provider, rows, recorded);
        printJson({ from: o.from?.toISOString() ?? null, to: o.to?.toISOString() ?? null, ...report });
      });
    });
}
