import type { OpenAPIHono } from "@hono/zod-openapi";
import { z } from "zod";
import { UNAUTHENTICATED } from "../auth/gate.js";
import { DomainError } from "../errors.js";
import type { AppEnv } from "../http/app-env.js";
import { readJson } from "../http/body.js";
import { errorBody } from "../http/errors.js";
import { contractRouter, defineRoute, ErrorEnvelope } from "../http/openapi.js";
import type { McpDeps } from "./tools.js";

export type { McpDeps } from "./tools.js";

const JsonRpcError = z.object({ jsonrpc: z.literal("2.0"), id: z.unknown().optional(), error: z.object({ code: z.number(), message: z.string() }).passthrough() });
const JsonRpcAnswer = z.union([z.record(z.string(), z.unknown()), z.array(z.record(z.string(), z.unknown()))]);

/**
 * POST /mcp: the Model Context Protocol over streamable HTTP, stateless (no Mcp-Session-Id: each
 * POST is answered on its own, with JSON). The caller is the key of `Authorization: Bearer`, as on
 * every route: its scopes decide which tools are listed and callable, its tenant what they read.
 * GET and DELETE answer 405: a stateless server offers no server-initiated stream and no session.
 */
export function mcpRoutes(deps: McpDeps, openApiDocument: () => unknown): OpenAPIHono<AppEnv> {
  const r = contractRouter();
  defineRoute(
    r,
    {
      method: "post",
      path: "/mcp",
      tag: "mcp",
      summary: "Model Context Protocol (streamable HTTP, stateless): Voxgate's tools and resources for an assistant",
      description:
        "JSON-RPC 2.0 messages of MCP (initialize, tools/list, tools/call, resources/list, resources/read). Authenticate with Authorization: Bearer <key>; " +
        "the key's scopes decide which tools are listed and callable, its tenant what they read. Accept must list application/json and text/event-stream; answers are JSON.",
      // Any valid key: which tools it may call is decided per tool (get_health needs no scope).
      scope: null,
      body: JsonRpcAnswer,
      bodyMode: "document",
      responses: {
        200: { description: "the JSON-RPC answer", schema: JsonRpcAnswer },
        202: { description: "a notification or response was accepted (no body)" },
        400: { description: "invalid JSON, or not a JSON-RPC message", schema: z.union([ErrorEnvelope, JsonRpcError]) },
        401: { description: "no valid API key", schema: ErrorEnvelope },
        406: { description: "Accept does not list application/json and text/event-stream", schema: JsonRpcError },
        415: { description: "Content-Type is not application/json (or an unsupported Content-Encoding)", schema: z.union([ErrorEnvelope, JsonRpcError]) },
      },
    },
    async (c) => {
      const { auth } = c.var;
      if (auth === UNAUTHENTICATED) throw new DomainError("unauthorized", "a valid API key is required: Authorization: Bearer <key>");
      const parsedBody = await readJson(c, c.var.bodyLimitBytes);
      // The MCP SDK and the tools' server are loaded on the first call: a server that is never asked
      // over MCP never loads them (startup time and idle memory, docs/perf/startup.md).
      const [{ WebStandardStreamableHTTPServerTransport }, { createMcpServer }] = await Promise.all([
        import("@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js"),
        import("./server.js"),
      ]);
      const server = createMcpServer({ services: deps, auth, openApiDocument });
      const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
      await server.connect(transport);
      try {
        return await transport.handleRequest(c.req.raw, { parsedBody });
      } finally {
        await server.close();
      }
    },
  );
  for (const method of ["get", "delete"] as const) {
    defineRoute(
      r,
      {
        method,
        path: "/mcp",
        tag: "mcp",
        summary: `${method.toUpperCase()} /mcp: not offered (the server is stateless: no server-initiated stream, no session to end)`,
        scope: null,
        responses: { 405: { description: "method not allowed; use POST", schema: ErrorEnvelope } },
      },
      (c) => {
        c.header("Allow", "POST");
        return c.json(errorBody("method_not_allowed", "this MCP server is stateless: send JSON-RPC messages with POST /mcp"), 405);
      },
    );
  }
  return r;
}
