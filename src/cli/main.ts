#!/usr/bin/env node
import { Command, InvalidArgumentError } from "commander";
import { ConfigError } from "../config/load.js";
import { VERSION } from "../version.js";
import { registerCheck } from "./check.js";
import { reportCliError } from "./errors.js";
import { registerKeys } from "./keys.js";
import { registerLatency } from "./latency.js";
import { registerMcp } from "./mcp.js";
import { registerRates } from "./rates.js";
import { registerReconcile } from "./reconcile.js";
import { registerRemoteCommands } from "./remote-commands.js";
import { registerRetention } from "./retention.js";
import { serveCommand } from "./serve.js";
import { withStore } from "./store.js";

function parsePort(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0 || n > 65535) throw new InvalidArgumentError("port must be 0-65535");
  return n;
}

const program = new Command()
  .name("voxgate")
  .description("Gateway and observability layer for voice-agent inference")
  .version(VERSION);

program
  .command("serve")
  .description("serve the API, dashboard API and web app (default port 8080, or serve.port)")
  .option("-p, --port <port>", "listen port (overrides serve.port)", parsePort)
  .option("--host <host>", "listen address (overrides serve.host)")
  .action(serveCommand);

program
  .command("migrate")
  .description("apply pending database migrations (serve also does this at start)")
  .action(async () => {
    await withStore(async ({ database }) => {
      process.stdout.write(`migrations applied (${database.kind}: ${database.location})\n`);
    });
  });

registerKeys(program);
registerCheck(program);
registerLatency(program);
registerRates(program);
registerReconcile(program);
registerRetention(program);
registerMcp(program);
registerRemoteCommands(program);

program.parseAsync(process.argv).catch((err: unknown) => {
  if (err instanceof ConfigError) {
    process.stderr.write(`voxgate: configuration error\n${err.message}\n`);
    process.exit(1);
  }
  process.exit(reportCliError(err));
});
