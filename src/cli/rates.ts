import cliProgress from "cli-progress";
import { type Command, InvalidArgumentError } from "commander";
import { OPERATOR } from "../auth/context.js";
import { RateCardStore } from "../billing/rate-card-store.js";
import { rerateWindow } from "../billing/rerate.js";
import { removeRule, setRule } from "../billing/rule-service.js";
import { listDbRules, publicRule } from "../billing/rule-store.js";
import { printJson } from "./output.js";
import { withStore } from "./store.js";

const CLI_ACTOR = { ...OPERATOR, actor: "cli" };

function parseDate(value: string): Date {
  const d = new Date(value);
  if (!/^\d{4}-\d{2}-\d{2}/.test(value) || Number.isNaN(d.getTime())) throw new InvalidArgumentError("expected an ISO date, e.g. 2026-10-01");
  return d;
}

/**
 * `voxgate rates …`: the rate card from the command line (same store and validation as endpoints
 * 10 and 15-17; a running server picks changes up at its next periodic refresh), and re-rating.
 */
export function registerRates(program: Command): void {
  const rates = program.command("rates").description("rate card: show, edit override rules, re-rate a window");

  rates
    .command("show")
    .description("the rate card in effect: default markup and every rule (seed + database), most specific first")
    .action(async () => {
      await withStore(async ({ database, config }) => {
        const store = new RateCardStore(database.db, config);
        await store.refresh();
        const { card } = store.snapshot();
        printJson({ default_markup: card.defaultMarkup, gate: config.pricing.gate, rules: (card.rules ?? []).map(publicRule) });
      });
    });

  rates
    .command("set <rule_json>")
    .description(`upsert the database rule of a scope, e.g. '{"modality":"stt","markup":1.5}' (the body of POST /v1/billing/rate-card/rules)`)
    .action(async (ruleJson: string) => {
      let body: unknown;
      try {
        body = JSON.parse(ruleJson);
      } catch {
        fail("the rule must be a JSON object");
      }
      await withStore(async ({ database }) => {
        // A refused rule is a DomainError (invalid_rate_rule): main prints it with its details, exit 2.
        const { rule, created } = await setRule({ db: database.db }, CLI_ACTOR, body);
        printJson({ ...publicRule(rule), created });
      });
    });

  rates
    .command("rules")
    .description("list the database override rules")
    .action(async () => {
      await withStore(async ({ database }) => printJson((await listDbRules(database.db)).map(publicRule)));
    });

  rates
    .command("delete <rule_id>")
    .description("delete a database override rule")
    .action(async (ruleId: string) => {
      await withStore(async ({ database }) => {
        const rule = await removeRule({ db: database.db }, CLI_ACTOR, ruleId);
        if (!rule) fail(`no rate rule with id ${ruleId}`);
        printJson({ deleted: true, ...publicRule(rule) });
      });
    });

  rates
    .command("rerate")
    .description("re-rate recorded requests in [from, to) with the current card; dry run unless --apply")
    .requiredOption("--from <date>", "window start (inclusive), ISO date", parseDate)
    .requiredOption("--to <date>", "window end (exclusive), ISO date", parseDate)
    .option("--tenant <tenant_id>", "only this tenant's requests")
    .option("--apply", "write the new ratings (default: report only)")
    .option("--batch <n>", "rows per batch", (v) => Number.parseInt(v, 10), 5000)
    .option("--no-progress", "no progress bar")
    .action(async (o: { from: Date; to: Date; tenant?: string; apply?: boolean; batch: number; progress: boolean }) => {
      if (!(o.from < o.to)) fail("--from must be before --to");
      await withStore(async ({ database, config }) => {
        const store = new RateCardStore(database.db, config);
        await store.refresh();
        const bar = o.progress ? new cliProgress.SingleBar({ stream: process.stderr, format: "re-rating [{bar}] {value}/{total} rows {percentage}%" }, cliProgress.Presets.shades_classic) : null;
        let started = false;
        const report = await rerateWindow(database.db, store.snapshot(), {
          from: o.from,
          to: o.to,
          tenant: o.tenant ?? null,
          apply: o.apply === true,
          batchSize: o.batch > 0 ? o.batch : 5000,
          onProgress: (done, total) => {
            if (!bar) return;
            if (!started) {
              bar.start(total, done);
              started = true;
            } else bar.update(done);
          },
        });
        bar?.stop();
        printJson(report);
        if (!report.applied && report.changed > 0) process.stderr.write("dry run: nothing was written; re-run with --apply to store these ratings\n");
      });
    });
}

function fail(message: string): never {
  process.stderr.write(`voxgate: ${message}\n`);
  process.exit(2);
}
