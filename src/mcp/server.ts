import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import {
  CallToolRequestSchema,
  type CallToolResult,
  ErrorCode,
  ListResourcesRequestSchema,
  ListToolsRequestSchema,
  ReadResourceRequestSchema,
  type Tool,
} from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";
import { type AuthContext, allows } from "../auth/context.js";
import { rateCard } from "../billing/answers.js";
import { zodDetails } from "../errors.js";
import { errorAnswer } from "../http/errors.js";
import { VERSION } from "../version.js";
import { summarize } from "./summary.js";
import { type McpDeps, TOOL_BY_NAME, TOOLS, type ToolSpec } from "./tools.js";

/** What the MCP server of one caller works with: the services, the caller's key, the OpenAPI document. */
export interface McpContext {
  services: McpDeps;
  auth: AuthContext;
  openApiDocument: () => unknown;
}

export const OPENAPI_RESOURCE = "voxgate://openapi.json";
export const RATE_CARD_RESOURCE = "voxgate://rate-card";

const INSTRUCTIONS =
  "Voxgate: gateway and observability for voice-agent inference (STT, LLM, TTS). Tools answer what the HTTP API answers " +
  "for the same query, with this key's scopes and tenant. Money is USD; periods are today, week, month or all.";

/** Each tool's JSON Schema, computed once (the input side: what a caller sends). */
const schemas = new Map<string, Tool["inputSchema"]>();
function inputSchema(spec: ToolSpec): Tool["inputSchema"] {
  let s = schemas.get(spec.name);
  if (!s) {
    const { $schema: _drop, ...json } = z.toJSONSchema(spec.input, { io: "input", unrepresentable: "any" }) as Record<string, unknown>;
    s = { ...json, type: "object" } as Tool["inputSchema"];
    schemas.set(spec.name, s);
  }
  return s;
}

/**
 * A JSON-RPC error answer. Not the SDK's McpError: that one prefixes its message with "MCP error <code>:",
 * which the client's McpError then prefixes again; the protocol layer sends any error's code, message and data.
 */
class RpcError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly data?: unknown,
  ) {
    super(message);
  }
}

const permitted = (auth: AuthContext, spec: ToolSpec) => spec.scope === null || allows(auth, spec.scope);

function missingScope(auth: AuthContext, spec: ToolSpec): RpcError | null {
  if (permitted(auth, spec)) return null;
  return new RpcError(ErrorCode.InvalidRequest, `this key lacks the ${spec.scope} scope that ${spec.name} needs`, { code: "forbidden", scope: spec.scope });
}

/** Calls one tool for the caller: scope first, then the route's own validation, then the route's function. */
export async function callTool(ctx: McpContext, name: string, args: unknown): Promise<CallToolResult> {
  const spec = TOOL_BY_NAME.get(name);
  if (!spec) throw new RpcError(ErrorCode.InvalidParams, `unknown tool ${name}`);
  const refused = missingScope(ctx.auth, spec);
  if (refused) throw refused;
  const parsed = spec.input.safeParse(args ?? {});
  if (!parsed.success) {
    const details = zodDetails(parsed.error);
    const first = details[0];
    throw new RpcError(ErrorCode.InvalidParams, `invalid arguments for ${name}: ${first ? `${first.path || "(arguments)"}: ${first.message}` : "refused"}`, {
      code: "validation_failed",
      details,
    });
  }
  try {
    const result = (await spec.run(ctx.services, ctx.auth, (spec.rawArguments ? (args ?? {}) : parsed.data) as never)) as Record<string, unknown>;
    return { content: [{ type: "text", text: summarize(name, result) }], structuredContent: result };
  } catch (err) {
    // The HTTP error envelope, as the route would answer it (a DomainError's code and message; never internals).
    const { body } = errorAnswer(err instanceof Error ? err : new Error(String(err)), ctx.services.log);
    return { isError: true, content: [{ type: "text", text: `${body.error.code}: ${body.error.message}` }], structuredContent: body };
  }
}

/** The tools this key may call (the others are not listed). */
export function listTools(auth: AuthContext): Tool[] {
  return TOOLS.filter((t) => permitted(auth, t)).map((t) => ({ name: t.name, description: t.description, inputSchema: inputSchema(t) }));
}

/** One caller's MCP server: tools and resources as the key allows. */
export function createMcpServer(ctx: McpContext): Server {
  const server = new Server({ name: "voxgate", version: VERSION }, { capabilities: { tools: {}, resources: {} }, instructions: INSTRUCTIONS });
  server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: listTools(ctx.auth) }));
  server.setRequestHandler(CallToolRequestSchema, (req) => callTool(ctx, req.params.name, req.params.arguments));
  const canRead = allows(ctx.auth, "read");
  server.setRequestHandler(ListResourcesRequestSchema, () => ({
    resources: [
      { uri: OPENAPI_RESOURCE, name: "openapi", title: "Voxgate OpenAPI document", description: "Every HTTP route, its parameters and answers", mimeType: "application/json" },
      ...(canRead ? [{ uri: RATE_CARD_RESOURCE, name: "rate-card", title: "Current rate card", description: "Default markup, gate and the rules visible to this key", mimeType: "application/json" }] : []),
    ],
  }));
  server.setRequestHandler(ReadResourceRequestSchema, (req) => {
    const { uri } = req.params;
    let value: unknown;
    if (uri === OPENAPI_RESOURCE) value = ctx.openApiDocument();
    else if (uri === RATE_CARD_RESOURCE) {
      if (!canRead) throw new RpcError(ErrorCode.InvalidRequest, "this key lacks the read scope that the rate card needs", { code: "forbidden", scope: "read" });
      value = rateCard(ctx.services, ctx.auth);
    } else throw new RpcError(ErrorCode.InvalidParams, `unknown resource ${uri}`);
    return { contents: [{ uri, mimeType: "application/json", text: JSON.stringify(value) }] };
  });
  return server;
}
