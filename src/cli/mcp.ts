import type { Command } from "commander";
import { runStdioBridge } from "../mcp/stdio.js";
import { type RemoteOptions, remoteTarget, withServerOptions } from "./remote.js";

/** `voxgate mcp`: an MCP server on stdin/stdout for a desktop assistant, answering from a running server's POST /mcp. */
export function registerMcp(program: Command): void {
  withServerOptions(
    program
      .command("mcp")
      .description("MCP server on stdio (for a desktop assistant) forwarding to a Voxgate server's POST /mcp: its tools, with the key's scopes and tenant"),
  ).action(async (o: RemoteOptions) => {
    const target = remoteTarget(o);
    try {
      await runStdioBridge(target);
    } catch (err) {
      // stdout is the protocol's: everything else goes to stderr.
      process.stderr.write(`voxgate: cannot start the MCP bridge to ${target.url}: ${(err as Error).message}\n`);
      process.exit(1);
    }
  });
}
