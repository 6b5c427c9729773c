import { existsSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { serveStatic } from "@hono/node-server/serve-static";
import { Hono, type MiddlewareHandler } from "hono";
import { requireScope } from "../auth/gate.js";
import type { AppEnv } from "../http/app-env.js";
import { parseOrThrow } from "../http/errors.js";
import { listEffectiveProviders } from "../manage/registry.js";
import { type CostReport, costReport } from "../reports/costs.js";
import { latencyReport } from "../reports/latency.js";
import { overview } from "../reports/overview.js";
import { costsQuery, latencyQuery, projectQuery } from "../reports/query.js";
import { dashboardExtraRoutes } from "./api-routes.js";

/** GET /api/costs: the /v1/costs report without project and requests; by_project only unfiltered. */
export type DashboardCostReport = Pick<CostReport, "period" | "total" | "by_provider" | "by_model"> & Partial<Pick<CostReport, "by_project">>;

/**
 * The dashboard API under /api (read by the web app): thin adapters over the same report functions
 * as /v1 (one query path), read scope, tenant from the key.
 */
export function dashboardApiRoutes() {
  const r = new Hono<AppEnv>();
  for (const path of ["/api/costs", "/api/latency", "/api/overview"]) r.use(path, requireScope("read"));

  r.get("/api/costs", async (c) => {
    const q = parseOrThrow(costsQuery, c.req.query(), "invalid query");
    const report = await costReport(c.var.services.database.db, { ...q, tenantId: c.var.auth.tenantId });
    const { period, total, by_provider, by_model, by_project } = report;
    // by_project only without a project filter (spec Dashboard API table).
    const body: DashboardCostReport = q.project === null ? { period, total, by_provider, by_model, by_project } : { period, total, by_provider, by_model };
    return c.json(body);
  });

  r.get("/api/latency", async (c) => {
    const q = parseOrThrow(latencyQuery, c.req.query(), "invalid query");
    return c.json(await latencyReport(c.var.services.database.db, { ...q, tenantId: c.var.auth.tenantId }));
  });

  // /api/logs (with its status filter and detail) and the other reads the web app needs.
  r.route("/", dashboardExtraRoutes());

  r.get("/api/overview", async (c) => {
    const q = parseOrThrow(projectQuery, c.req.query(), "invalid query");
    const services = c.var.services;
    const providers = await listEffectiveProviders(services);
    return c.json(await overview(services.database.db, { ...q, tenantId: c.var.auth.tenantId, providers }));
  });
  return r;
}

export const DASHBOARD_DIST = fileURLToPath(new URL("../../dashboard/dist", import.meta.url));

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
