import { OpenAPIHono } from "@hono/zod-openapi";
import { z } from "zod";
import { apiKeyRoutes } from "../auth/routes.js";
import { authOffRefusal } from "../auth/browser-guard.js";
import { identify } from "../auth/gate.js";
import { auditRoutes } from "../audit/routes.js";
import { billingRoutes } from "../billing/routes.js";
import { callRoutes } from "../calls/routes.js";
import { dashboardApiRoutes, webAppRoutes } from "../dashboard/routes.js";
import { fleetRoutes } from "../fleet/routes.js";
import { gatewayRoutes } from "../gateway/routes.js";
import { gatewayWsRoutes } from "../gateway/ws/routes.js";
import { ingestRoutes } from "../ingest/routes.js";
import { manageRoutes } from "../manage/routes.js";
import { mcpRoutes } from "../mcp/routes.js";
import { health } from "../manage/status.js";
import { otlpRoutes } from "../otlp/routes.js";
import { readRoutes } from "../reports/routes.js";
import { secretRoutes } from "../secrets/routes.js";
import { sessionRoutes } from "../sessions/routes.js";
import { authEnabled, type Services } from "../services.js";
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

export function createApp(services: Services, options: AppOptions = {}): OpenAPIHono<AppEnv> {
  const app = new OpenAPIHono<AppEnv>();
  registerComponents(app);
  registerGatewayPaths(app);
  app.use(async (c, next) => {
    c.set("services", services);
    c.set("log", services.log);
    await next();
  });
  if (options.checkContracts) app.use(checkContracts);
  // Before the per-request log and header middleware: the gateway's hot path writes its own headers
  // and records each call (src/gateway).
  app.route("/", gatewayWsRoutes());
  app.route("/", gatewayRoutes());
  // Auth off: nothing a web page could send (foreign Host, Origin, cross-site) reaches any other route
  // (the gateway's routes apply the same rule in their admission, after the loopback-peer rule).
  app.use(async (c, next) => {
    if (!authEnabled(services)) {
      const refused = authOffRefusal((name) => c.req.header(name), c.req.path, services.config.serve.allowed_hosts);
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
    (c) => c.json(health(services)),
  );

  app.use("/v1/*", identify);
  app.use("/api/*", identify);
  app.use("/mcp", identify);
  app.use(refuseUnstorableUrl);
  app.route("/", apiKeyRoutes());
  app.route("/", ingestRoutes());
  app.route("/", otlpRoutes());
  app.route("/", fleetRoutes());
  app.route("/", callRoutes());
  app.route("/", billingRoutes());
  app.route("/", manageRoutes());
  app.route("/", auditRoutes());
  app.route("/", secretRoutes());
  app.route("/", readRoutes());
  app.route("/", sessionRoutes());
  app.route("/", dashboardApiRoutes());
  app.route("/", openApiRoutes(app));
  app.route("/", mcpRoutes(() => openApiDocument(app)));

  // Unknown /v1 and /api paths are JSON 404s; everything else falls through to the web app.
  app.all("/v1/*", (c) => c.json(errorBody("not_found", `no route ${c.req.method} ${c.req.path}`), 404));
  app.all("/api/*", (c) => c.json(errorBody("not_found", `no route ${c.req.method} ${c.req.path}`), 404));
  app.route("/", docsRoutes());
  app.route("/", webAppRoutes());

  app.notFound((c) => c.json(errorBody("not_found", `no route ${c.req.method} ${c.req.path}`), 404));
  app.onError(handleError);
  return app;
}
