import { fileURLToPath } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { McpError } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { useTestApp } from "../support/app.js";
import { KEYS } from "../support/fixtures.js";
import { runCli } from "../support/spawn.js";
import { MCP_YAML, READ_TOOLS, seedCalls } from "./support.js";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));

/** `voxgate mcp` from source, spoken to by the SDK's own stdio client. */
async function stdioClient(base: string, key: string): Promise<Client> {
  const client = new Client({ name: "voxgate-stdio-test", version: "0" });
  const env = Object.fromEntries(Object.entries(process.env).filter((e): e is [string, string] => e[1] !== undefined));
  await client.connect(
    new StdioClientTransport({
      command: process.execPath,
      args: ["--import", "tsx", "src/cli/main.ts", "mcp"],
      cwd: ROOT,
      env: { ...env, VOXGATE_URL: base, VOXGATE_API_KEY: key },
      stderr: "pipe",
    }),
  );
  return client;
}

describe("voxgate mcp (stdio, forwarding to a running server)", () => {
  const t = useTestApp({ yaml: MCP_YAML, listen: true });
  let reader: Client;
  let acme: Client;
  beforeAll(async () => {
    await seedCalls(t.services.database.db);
    [reader, acme] = await Promise.all([stdioClient(t.base, KEYS.reader), stdioClient(t.base, KEYS.acmeReader)]);
  }, 60_000);
  afterAll(async () => {
    await Promise.all([reader?.close(), acme?.close()]);
  });

  it("lists the server's tools for the key: a read key gets no write tools", async () => {
    expect((await reader.listTools()).tools.map((x) => x.name).sort()).toEqual([...READ_TOOLS].sort());
  });

  it("answers tools with the route's JSON, scoped to the key's tenant", async () => {
    const costs = await acme.callTool({ name: "get_costs", arguments: { period: "week" } });
    expect(costs.structuredContent).toEqual(await (await t.call("GET", "/v1/costs?period=week", { key: KEYS.acmeReader })).json());
    expect((costs.structuredContent as { total: number }).total).toBe(0.3);
    const gaps = await reader.callTool({ name: "get_pricing_gaps", arguments: {} });
    expect(gaps.structuredContent).toEqual(await (await t.call("GET", "/v1/billing/rate-card/gaps", { key: KEYS.reader })).json());
    const logs = await acme.callTool({ name: "get_logs", arguments: { limit: 5 } });
    expect(JSON.stringify(logs.structuredContent)).not.toContain("globex");
  });

  it("passes the server's refusals through as MCP errors: a write for a read key, bad arguments", async () => {
    const write = await reader.callTool({ name: "upsert_rate_rule", arguments: { markup: 2 } }).catch((e: unknown) => e);
    expect(write).toBeInstanceOf(McpError);
    expect((write as McpError).message).toContain("write scope");
    const bad = await reader.callTool({ name: "get_costs", arguments: { period: 7 } }).catch((e: unknown) => e);
    expect((bad as McpError).code).toBe(-32602);
    expect((bad as McpError).message).toContain("period");
    // The bridge is still up after the refusals.
    expect((await reader.callTool({ name: "get_health", arguments: {} })).structuredContent).toMatchObject({ status: "ok" });
    const resources = await reader.listResources();
    expect(resources.resources.map((r) => r.uri)).toContain("voxgate://rate-card");
  });

  it("exits 1 naming the server when the key is refused, 2 without a server", async () => {
    const refused = await runCli(["mcp"], { VOXGATE_URL: t.base, VOXGATE_API_KEY: "wrong-key-0123456789abcdef" });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(t.base);
    expect(refused.stdout).toBe("");
    const none = await runCli(["mcp"], { VOXGATE_URL: "", VOXGATE_API_KEY: "" });
    expect(none.code).toBe(2);
    expect(none.stderr).toContain("VOXGATE_URL");
  }, 60_000);
});
