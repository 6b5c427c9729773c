import { hostname } from "node:os";
import type { Command } from "commander";
import { parseEnv } from "../config/env.js";
import { collectorGates, localGates, storeRun } from "../diagnostics/check.js";
import { verdictOf } from "../diagnostics/gates.js";
import { printAnswer, withJsonOption } from "./output.js";
import { withStore } from "./store.js";

/** `voxgate check`: runs the health gates, stores the run, exits 0 only when the verdict is PASS. */
export function registerCheck(program: Command): void {
  withJsonOption(program.command("check").description("run health gates (store, providers, auth, LiveKit, collector); exit 0 only on PASS"), "print the run as JSON").action(async (o: { json?: boolean }) => {
    const env = parseEnv();
    const startedAt = new Date();
    const { gates, verdict } = await withStore(async ({ database, config }) => {
      const all = [...(await localGates(config, env, database)), ...(await collectorGates(env))];
      return { gates: all, verdict: await storeRun(database, hostname(), all, startedAt) };
    });
    printAnswer(o, { verdict, gates }, (run) => `${run.gates.map((g) => `${g.status.padEnd(8)} ${g.gateId.padEnd(18)} ${g.detail}\n`).join("")}verdict: ${run.verdict}\n`);
    process.exitCode = verdictOf([verdict]) === "PASS" ? 0 : 1;
  });
}
