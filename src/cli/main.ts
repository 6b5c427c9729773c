#!/usr/bin/env node
import { Command, InvalidArgumentError } from "commander";
import { ConfigError } from "../config/load.js";
import { VERSION } from "../version.js";
import { reportCliError } from "./errors.js";

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
  .action(async (opts: { port?: number; host?: string }) => (await import("./serve.js")).serveCommand(opts));

program
  .command("migrate")
  .description("apply pending database migrations (serve also does this at start)")
  .action(async () => {
    const { withStore } = await import("./store.js");
    await withStore(async ({ database }) => {
      process.stdout.write(`migrations applied (${database.kind}: ${database.location})\n`);
    });
  });

/**
 * The other commands' modules, each registering its commands. They are loaded only when the command
 * line names none of the two above: `serve` answers /health without loading the code of every
 * other command (the MCP client, the reconcile parsers, progress bars: docs/perf/startup.md). Help,
 * no command or any other name loads them all, so commander lists and suggests every command.
 */
const OTHER_COMMANDS: (() => Promise<(program: Command) => void>)[] = [
  () => import("./keys.js").then((m) => m.registerKeys),
  () => import("./check.js").then((m) => m.registerCheck),
  () => import("./latency.js").then((m) => m.registerLatency),
  () => import("./rates.js").then((m) => m.registerRates),
  () => import("./reconcile.js").then((m) => m.registerReconcile),
  () => import("./retention.js").then((m) => m.registerRetention),
  () => import("./mcp.js").then((m) => m.registerMcp),
  () => import("./remote-commands.js").then((m) => m.registerRemoteCommands),
];

const chosen = process.argv.slice(2).find((arg) => !arg.startsWith("-"));
if (chosen !== "serve" && chosen !== "migrate") {
  const registers = await Promise.all(OTHER_COMMANDS.map((load) => load()));
  for (const register of registers) register(program);
}

program.parseAsync(process.argv).catch((err: unknown) => {
  if (err instanceof ConfigError) {
    process.stderr.write(`voxgate: configuration error\n${err.message}\n`);
    process.exit(1);
  }
  process.exit(reportCliError(err));
});
