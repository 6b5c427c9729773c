import { OpenAPIHono } from "@hono/zod-openapi";
import type { Context } from "hono";
import { z } from "zod";
import { authOffRefusal } from "../auth/browser-guard.js";
import { auditRoutes } from "../audit/routes.js";
import { authEnabled, identify, type KeyGate } from "../auth/gate.js";
import { type ApiKeyRouteDeps, apiKeyRoutes } from "../auth/routes.js";
import { type BillingRouteDeps, billingRoutes } from "../billing/routes.js";
import { type CallRouteDeps, callRoutes } from "../calls/routes.js";
import type { Config } from "../config/schema.js";
import { type DashboardRouteDeps, dashboardApiRoutes, webAppRoutes } from "../dashboard/routes.js";
import { fleetRoutes } from "../fleet/routes.js";
import type { Gateway } from "../gateway/gateway.js";
import type { IngestDeps } from "../ingest/ingest-requests.js";
import { ingestRoutes } from "../ingest/routes.js";
import type { Logger } from "../logging.js";
import { type ManageRouteDeps, manageRoutes } from "../manage/routes.js";
import { health } from "../manage/status.js";
import { type McpDeps, mcpRoutes } from "../mcp/routes.js";
import type { MetricsSources } from "../metrics/collect.js";
import { otlpRoutes } from "../otlp/routes.js";
import { readRoutes } from "../reports/routes.js";
import { secretRoutes } from "../secrets/routes.js";
import { type SessionRouteDeps, sessionRoutes } from "../sessions/routes.js";
import { DomainError } from "../errors.js";
import type { AppEnv } from "./app-env.js";
import { errorBody, handleError } from "./errors.js";
import { checkContracts, defineRoute, registerComponents } from "./openapi.js";
import { docsRoutes, openApiDocument, openApiRoutes } from "./openapi-docs.js";
import { registerGatewayPaths } from "./openapi-gateway.js";
import { requestLog } from "./request-log.js";
import { securityHeaders } from "./security-headers.js";
import { refuseUnstorableUrl } from "./storable-url.js";

/**
 * The one Hono app: public API (/v1), dashboard API (/api) and web app (/) on one port.
 * Each area's router declares its own gate (requireScope) and defines full paths.
 */
export interface AppOptions {
  /** Test mode: every answer of a declared route is checked against its documented schema (src/http/openapi.ts). */
  checkContracts?: boolean;
}

/** Everything the routes take between them (the composition root's Services is one). */
export type AppDeps = KeyGate &
  ApiKeyRouteDeps &
  BillingRouteDeps &
  CallRouteDeps &
  DashboardRouteDeps &
  IngestDeps &
  ManageRouteDeps &
  MetricsSources &
  SessionRouteDeps &
  McpDeps & { config: Config; log: Logger; gateway: Gateway; startedAt: number };

export function createApp(deps: AppDeps, options: AppOptions = {}): OpenAPIHono<AppEnv> {
  const app = new OpenAPIHono<AppEnv>();
  registerComponents(app);
  registerGatewayPaths(app);
  app.use(async (c, next) => {
    c.set("log", deps.log);
    c.set("bodyLimitBytes", deps.config.serve.body_limit_bytes);
    await next();
  });
  if (options.checkContracts) app.use(checkContracts);
  // No gateway route is here: the gateway's listener (src/gateway/listener.ts) serves its paths and
  // every WebSocket upgrade in front of this app.
  // Auth off: nothing a web page could send (foreign Host, Origin, cross-site) reaches any other route
  // (the gateway's routes apply the same rule in their admission, after the loopback-peer rule).
  app.use(async (c, next) => {
    if (!authEnabled(deps)) {
      const refused = authOffRefusal((name) => c.req.header(name), c.req.path, deps.config.serve.allowed_hosts);
      if (refused) throw new DomainError("forbidden", refused);
    }
    await next();
  });
  app.use(requestLog);
  app.use(securityHeaders);

  defineRoute(
    app,
    {
      method: "get",
      path: "/health",
      tag: "meta",
      summary: "Liveness",
      scope: null,
      responses: {
        200: { description: "up", schema: z.object({ status: z.literal("ok"), uptime_seconds: z.number(), version: z.string() }) },
      },
    },
    (c) => c.json(health(deps)),
  );

  const identified = identify(deps);
  app.use("/v1/*", identified);
  app.use("/api/*", identified);
  app.use("/mcp", identified);
  app.use(refuseUnstorableUrl);
  // Each area's router defines full paths, so all mount at the root, in this order.
  const areas = [
    apiKeyRoutes(deps),
    ingestRoutes(deps),
    otlpRoutes(deps),
    fleetRoutes(deps),
    callRoutes(deps),
    billingRoutes(deps),
    manageRoutes(deps),
    auditRoutes(deps),
    secretRoutes(deps),
    readRoutes(deps),
    sessionRoutes(deps),
    dashboardApiRoutes(deps),
    openApiRoutes(app),
    mcpRoutes(deps, () => openApiDocument(app)),
  ];
  for (const area of areas) app.route("/", area);

  // Unknown /v1 and /api paths are JSON 404s; everything else falls through to the web app.
  const noRoute = (c: Context<AppEnv>) => c.json(errorBody("not_found", `no route ${c.req.method} ${c.req.path}`), 404);
  app.all("/v1/*", noRoute);
  app.all("/api/*", noRoute);
  app.route("/", docsRoutes());
  app.route("/", webAppRoutes());

  app.notFound(noRoute);
  app.onError(handleError);
  return app;
}
