import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { serveStatic } from "@hono/node-server/serve-static";
import { Hono, type MiddlewareHandler } from "hono";
import type { AppEnv } from "../http/app-env.js";
import { contractRouter, defineRead } from "../http/openapi.js";
import { listEffectiveProviders } from "../manage/registry.js";
import { costReport } from "../reports/costs.js";
import { latencyReport } from "../reports/latency.js";
import { overview } from "../reports/overview.js";
import { costsQuery, latencyQuery, projectQuery } from "../reports/query.js";
import { gateOtherMethods } from "../reports/routes.js";
import { LatencyReportSchema, OverviewSchema } from "../reports/schemas.js";
import { PACKAGE_ROOT } from "../version.js";
import { type DashboardRouteDeps, dashboardExtraRoutes } from "./api-routes.js";
import { type DashboardCostReport, DashboardCostReportSchema } from "./schemas.js";

/** GET /api/costs: the /v1/costs report without project and requests; by_project only unfiltered (type from schemas.ts). */
export type { DashboardCostReport } from "./schemas.js";

export const DASHBOARD_TAG = "dashboard";

export type { DashboardRouteDeps };

/**
 * The dashboard API under /api (read by the web app): thin adapters over the same report functions
 * as /v1 (one query path), read scope, tenant from the key.
 */
export function dashboardApiRoutes(deps: DashboardRouteDeps) {
  const r = contractRouter();
  const tag = DASHBOARD_TAG;
  gateOtherMethods(r, ["/api/costs", "/api/latency", "/api/overview"], "read");

  defineRead(
    r,
    { path: "/api/costs", tag, summary: "Spend over a period by provider and model (by project without a project filter)", query: costsQuery, response: { description: "the cost report", schema: DashboardCostReportSchema } },
    async (q, auth): Promise<DashboardCostReport> => {
      const { period, total, by_provider, by_model, by_project } = await costReport(deps.readDatabase.db, { ...q, tenantId: auth.tenantId });
      // by_project only without a project filter (docs/api/dashboard.md).
      return q.project === null ? { period, total, by_provider, by_model, by_project } : { period, total, by_provider, by_model };
    },
  );

  defineRead(
    r,
    { path: "/api/latency", tag, summary: "TTFB and total latency percentiles per model, as GET /v1/latency", query: latencyQuery, response: { description: "the latency report", schema: LatencyReportSchema } },
    (query, auth) => latencyReport(deps.readDatabase.db, { ...query, tenantId: auth.tenantId }),
  );

  // /api/logs (with its status filter and detail) and the other reads the web app needs.
  r.route("/", dashboardExtraRoutes(deps));

  defineRead(
    r,
    { path: "/api/overview", tag, summary: "Headline numbers: requests, spend today and overall, active models, configured providers", query: projectQuery, response: { description: "the overview", schema: OverviewSchema } },
    async (query, auth) => overview(deps.readDatabase.db, { ...query, tenantId: auth.tenantId, providers: await listEffectiveProviders(deps) }),
  );
  return r;
}

export const DASHBOARD_DIST = join(PACKAGE_ROOT, "dashboard", "dist");

/**
 * The single-page web app: /assets/* from the Vite build, every other path the index page
 * (client-side routing). Without a build, / explains how to make one.
 */
export function webAppRoutes(distDir: string = DASHBOARD_DIST) {
  const r = new Hono<AppEnv>();
  const indexPath = `${distDir}/index.html`;
  let indexHtml: string | null = null;
  const loadIndex = () => {
    if (indexHtml === null && existsSync(indexPath)) indexHtml = readFileSync(indexPath, "utf8");
    return indexHtml;
  };
  // Created on the first asset request once the build exists: serveStatic warns on stderr when its
  // root is missing (every test app and every server without a build), and a build made after start
  // must still be served on reload.
  let assets: MiddlewareHandler | null = null;
  r.use("/assets/*", (c, next) => {
    if (assets === null && existsSync(distDir)) assets = serveStatic({ root: distDir });
    return assets === null ? next() : assets(c, next);
  });
  // A missing asset is a 404, not the index page: a stale tab asking for an old bundle must fail
  // loudly rather than run HTML as a script.
  r.get("/assets/*", (c) => c.text("no such asset\n", 404));
  r.get("*", (c) => {
    const html = loadIndex();
    if (html === null) {
      return c.text(
        "The Voxgate dashboard is not built. Run `npm run build:dashboard` (or `npm ci`, which builds it), then reload.\n",
        503,
      );
    }
    return c.html(html);
  });
  return r;
}
