import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import { CallToolRequestSchema, ListResourcesRequestSchema, ListToolsRequestSchema, ReadResourceRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { VERSION } from "../version.js";

/** `<base>/mcp`, keeping a path prefix the server is mounted under (https://host/voxgate → /voxgate/mcp). */
export function mcpEndpoint(baseUrl: string): URL {
  const url = new URL(baseUrl);
  url.pathname = `${url.pathname.replace(/\/+$/, "")}/mcp`;
  return url;
}

/**
 * `voxgate mcp`: an MCP server on stdio that forwards every request to a Voxgate server's POST /mcp
 * with the given key. Nothing is decided here: the tool list, the scopes, the tenant and every answer
 * (errors included, with their JSON-RPC code) are the server's.
 */
export async function runStdioBridge(opts: { url: string; key: string | undefined; transport?: Transport }): Promise<{ close: () => Promise<void> }> {
  const remote = new Client({ name: "voxgate-mcp-stdio", version: VERSION });
  const headers: Record<string, string> = opts.key ? { authorization: `Bearer ${opts.key}` } : {};
  await remote.connect(new StreamableHTTPClientTransport(mcpEndpoint(opts.url), { requestInit: { headers } }));
  const server = new Server(
    { name: "voxgate", version: VERSION },
    { capabilities: { tools: {}, resources: {} }, ...(remote.getInstructions() ? { instructions: remote.getInstructions() } : {}) },
  );
  server.setRequestHandler(ListToolsRequestSchema, (req) => remote.listTools(req.params));
  server.setRequestHandler(CallToolRequestSchema, (req) => remote.callTool(req.params));
  server.setRequestHandler(ListResourcesRequestSchema, (req) => remote.listResources(req.params));
  server.setRequestHandler(ReadResourceRequestSchema, (req) => remote.readResource(req.params));
  const close = async () => {
    await server.close().catch(() => {});
    await remote.close().catch(() => {});
  };
  server.onclose = () => void remote.close().catch(() => {});
  await server.connect(opts.transport ?? new StdioServerTransport());
  return { close };
}
