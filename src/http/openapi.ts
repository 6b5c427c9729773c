import { createRoute, OpenAPIHono, type RouteConfig } from "@hono/zod-openapi";
import type { Context, MiddlewareHandler } from "hono";
import { createMiddleware } from "hono/factory";
import { z } from "zod";
import type { AuthContext, Permission } from "../auth/context.js";
import { requireScope } from "../auth/gate.js";
import { VERSION } from "../version.js";
import type { AppEnv, HttpMethod, ResponseSpec, RouteContract } from "./app-env.js";

export type { HttpMethod, ResponseSpec, RouteContract } from "./app-env.js";
import { readJson } from "./body.js";
import { ERROR_CODES, parseOrThrow } from "./errors.js";

/**
 * Route contracts. Every route is declared once with `defineRoute`: its method and path, the zod
 * schemas of its params, query and JSON body, each response status with its schema, the scope its
 * gate needs and its tag. From that one declaration come the route itself (gate, then input
 * validated exactly as the handlers did before: params, query, body read through readJson so the
 * size limit, decompression, strict UTF-8 and the unstorable-text check still run first), the
 * OpenAPI 3.1 document served at GET /v1/openapi.json, and the test-mode response check.
 *
 * Why not OpenAPIHono's own validators: they read the body with c.req.json() (no limit, no gzip,
 * a different 400) and run before the gate's 401/403; the envelope and the order of checks are
 * part of the observable behaviour, so validation stays ours and the zod-openapi layer only
 * documents (createRoute + the registry).
 */

/** The one error envelope, as a schema. */
export const ErrorEnvelope = z
  .object({
    error: z.object({
      code: z.enum(Object.keys(ERROR_CODES) as [keyof typeof ERROR_CODES, ...(keyof typeof ERROR_CODES)[]]).describe("machine-readable code; the closed list is in src/http/errors.ts"),
      message: z.string().describe("human-readable explanation"),
      details: z.unknown().optional().describe("for validation_failed: [{path, message}] per offending field"),
    }),
  })
  .meta({ id: "ErrorEnvelope", description: "Every error answer: {error: {code, message, details?}}" });


type Schema = z.ZodType | undefined;
type Out<T extends Schema> = T extends z.ZodType ? z.output<T> : undefined;

export interface RouteSpec<P extends Schema, Q extends Schema, B extends Schema> {
  method: HttpMethod;
  /** OpenAPI path, `{param}` style. */
  path: string;
  /** Hono paths when they differ from `path` (a greedy `{.+}` parameter, an alias). */
  honoPaths?: readonly string[];
  tag: string;
  summary: string;
  description?: string;
  /** The gate: the scope it needs, or null for a route without auth. */
  scope: Permission | null;
  /** Middleware run after the gate and before input validation (e.g. requireUntenanted). */
  middleware?: readonly MiddlewareHandler<AppEnv>[];
  params?: P;
  query?: Q;
  /** Message prefix of the query's 422 (defaults to parseOrThrow's). */
  queryMessage?: string;
  body?: B;
  /** "validate" (default): read with readJson and parse; "document": the handler reads the body itself. */
  bodyMode?: "validate" | "document";
  bodyContentType?: string;
  /** Success and route-specific error statuses; the shared error statuses are added (see errorStatuses). */
  responses: Record<number, ResponseSpec>;
}

export interface RouteInput<P extends Schema, Q extends Schema, B extends Schema> {
  params: Out<P>;
  query: Out<Q>;
  body: Out<B>;
}


const ERROR_DESCRIPTIONS: Record<number, string> = {
  400: "malformed request (invalid JSON, bad encoding, or a rule docs/api.md answers with 400)",
  401: "no valid API key",
  403: "the key lacks the scope, or is bound to a tenant where the route is the operator's",
  404: "no such resource",
  409: "conflict with the current state",
  413: "request body over the size limit",
  415: "unsupported Content-Encoding",
  422: "validation_failed: details lists each offending field",
  429: "rate or budget limit",
  500: "internal error",
  502: "upstream answered badly",
  503: "a backing connection is unavailable; retry (Retry-After)",
  504: "upstream timed out",
};

/**
 * The error statuses every route of its kind can answer, besides its own: a gated route 401/403,
 * any /v1 or /api route 422 (a query value Postgres cannot store, refused at the edge) and 404
 * (such a path segment), a JSON body 400/413/415/422, and always 500/503.
 */
function errorStatuses(spec: RouteSpec<Schema, Schema, Schema>): number[] {
  const out = [422, 500, 503];
  if (spec.scope !== null) out.push(401, 403);
  if (spec.path.includes("{")) out.push(404);
  if (spec.body) out.push(400, 413, 415);
  return out;
}

function allResponses(spec: RouteSpec<Schema, Schema, Schema>): Record<number, ResponseSpec> {
  const responses: Record<number, ResponseSpec> = { ...spec.responses };
  for (const status of errorStatuses(spec)) {
    responses[status] ??= { description: ERROR_DESCRIPTIONS[status] ?? "error", schema: ErrorEnvelope };
  }
  for (const [status, r] of Object.entries(responses)) {
    if (Number(status) >= 400 && !r.schema && !r.contentType) responses[Number(status)] = { ...r, schema: ErrorEnvelope };
  }
  return responses;
}

/** `{name}` to Hono's `:name`. */
export function honoPath(openApiPath: string): string {
  return openApiPath.replaceAll(/\{([^}]+)\}/g, ":$1");
}

function toRouteConfig(spec: RouteSpec<Schema, Schema, Schema>, responses: Record<number, ResponseSpec>): RouteConfig {
  const request: NonNullable<RouteConfig["request"]> = {};
  if (spec.params instanceof z.ZodObject) request.params = spec.params;
  if (spec.query instanceof z.ZodObject) request.query = spec.query;
  if (spec.body) {
    request.body = { required: true, content: { [spec.bodyContentType ?? "application/json"]: { schema: spec.body } } };
  }
  const docResponses: RouteConfig["responses"] = {};
  for (const [status, r] of Object.entries(responses)) {
    const others = Object.fromEntries((r.otherContentTypes ?? []).map((t) => [t, { schema: { type: "string" as const, format: "binary" } }]));
    docResponses[status] = r.schema
      ? { description: r.description, content: { [r.contentType ?? "application/json"]: { schema: r.schema }, ...others } }
      : r.contentType
        ? { description: r.description, content: { [r.contentType]: { schema: { type: "string" } }, ...others } }
        : { description: r.description };
  }
  return createRoute({
    method: spec.method,
    path: spec.path,
    tags: [spec.tag],
    summary: spec.summary,
    ...(spec.description ? { description: spec.description } : {}),
    ...(spec.scope !== null ? { security: [{ bearer: [spec.scope] }] } : { security: [] }),
    request,
    responses: docResponses,
  });
}

/** Declares one route on `router`: documents it and registers gate, validation and handler. */
export function defineRoute<P extends Schema = undefined, Q extends Schema = undefined, B extends Schema = undefined>(
  router: OpenAPIHono<AppEnv>,
  spec: RouteSpec<P, Q, B>,
  handler: (c: Context<AppEnv>, input: RouteInput<P, Q, B>) => Response | Promise<Response>,
): void {
  const responses = allResponses(spec);
  router.openAPIRegistry.registerPath(toRouteConfig(spec, responses));
  const contract: RouteContract = { method: spec.method, path: spec.path, responses };
  const mark = createMiddleware<AppEnv>(async (c, next) => {
    c.set("contract", contract);
    await next();
  });
  const chain: MiddlewareHandler<AppEnv>[] = [mark];
  if (spec.scope !== null) chain.push(requireScope(spec.scope));
  chain.push(...(spec.middleware ?? []));
  const run = async (c: Context<AppEnv>) => {
    const params = spec.params ? parseOrThrow(spec.params, c.req.param()) : undefined;
    const query = spec.query ? parseOrThrow(spec.query, c.req.query(), spec.queryMessage) : undefined;
    const body =
      spec.body && (spec.bodyMode ?? "validate") === "validate"
        ? parseOrThrow(spec.body, await readJson(c, c.var.bodyLimitBytes))
        : undefined;
    return handler(c, { params, query, body } as RouteInput<P, Q, B>);
  };
  router.on([spec.method.toUpperCase()], [...(spec.honoPaths ?? [honoPath(spec.path)])], ...chain, run);
}

/**
 * A read: GET with read scope, its query checked by its schema (422 "invalid query: …"), one answer
 * computed for the key (`auth`: its tenant) and sent as JSON. The reports, series and lists of /v1 and
 * of the dashboard's API are declared this way: each gives its path, words, query and answer only.
 */
export function defineRead<Q extends z.ZodType>(
  router: OpenAPIHono<AppEnv>,
  spec: { path: string; tag: string; summary: string; description?: string; query: Q; response: ResponseSpec },
  answer: (query: z.output<Q>, auth: AuthContext) => Promise<unknown>,
): void {
  const { response, ...rest } = spec;
  defineRoute(router, { ...rest, method: "get", scope: "read", queryMessage: "invalid query", responses: { 200: response } }, async (c, { query }) =>
    c.json(await answer(query as z.output<Q>, c.var.auth)),
  );
}

/** A router whose routes land in the document when mounted on the app. */
export function contractRouter(): OpenAPIHono<AppEnv> {
  return new OpenAPIHono<AppEnv>();
}

export const OPENAPI_INFO = {
  openapi: "3.1.0",
  info: {
    title: "Voxgate API",
    version: VERSION,
    description:
      "Gateway and observability for voice-agent inference. Authenticate with `Authorization: Bearer <key>`; " +
      "each operation lists the scope its key needs. Every error answers {error: {code, message, details?}}. " +
      "Assistants reach the same reads and changes as Model Context Protocol tools at POST /mcp (streamable HTTP, stateless, the same keys and scopes), " +
      "or over stdio with `voxgate mcp` pointed at this server.",
  },
} as const;

/** Registers the shared components (the bearer scheme) on the app's registry. */
export function registerComponents(app: OpenAPIHono<AppEnv>): void {
  app.openAPIRegistry.registerComponent("securitySchemes", "bearer", {
    type: "http",
    scheme: "bearer",
    description: "A static key from voxgate.yaml/VOXGATE_API_KEY or a minted vk_ key. The list under each operation names the scope it needs (read, write, ingest, infer, admin).",
  });
}

/**
 * Test mode: every answer of a declared route must match the schema documented for its status
 * (JSON bodies parsed and checked; other bodies by content type). A mismatch replaces the answer
 * with a 500 naming the route, the status and the first differences, so the test that made the
 * request fails and says why.
 */
export const checkContracts: MiddlewareHandler<AppEnv> = async (c, next) => {
  await next();
  const contract = c.var.contract;
  if (!contract) return;
  const problem = await contractProblem(contract, c.res);
  if (problem === null) return;
  const message = `response breaks the contract of ${contract.method.toUpperCase()} ${contract.path}: ${problem}`;
  c.var.log?.error({ contract: contract.path }, message);
  c.res = new Response(JSON.stringify({ error: { code: "internal_error", message } }), {
    status: 500,
    headers: { "content-type": "application/json" },
  });
};

async function contractProblem(contract: RouteContract, res: Response): Promise<string | null> {
  const spec = contract.responses[res.status];
  if (!spec) return `status ${res.status} is not documented`;
  const type = res.headers.get("content-type") ?? "";
  if (spec.otherContentTypes?.some((t) => type.startsWith(t))) return null;
  if (!spec.schema) {
    if (spec.contentType) return type.startsWith(spec.contentType) ? null : `content-type ${type}, documented ${spec.contentType}`;
    return res.body === null || (await res.clone().text()) === "" ? null : `status ${res.status} is documented without a body`;
  }
  if (!type.includes(spec.contentType ?? "application/json")) return `content-type ${type}, documented ${spec.contentType ?? "application/json"}`;
  let value: unknown;
  try {
    value = JSON.parse(await res.clone().text());
  } catch {
    return "body is not JSON";
  }
  const result = spec.schema.safeParse(value);
  if (result.success) return null;
  return result.error.issues
    .slice(0, 3)
    .map((i) => `${i.path.map(String).join(".") || "(body)"}: ${i.message}`)
    .join("; ");
}
