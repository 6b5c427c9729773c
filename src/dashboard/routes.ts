import { existsSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { serveStatic } from "@hono/node-server/serve-static";
import { Hono } from "hono";
import type { AppEnv } from "../http/app-env.js";

/** The dashboard API under /api (read by the web app). Routes land with the read-path issue. */
export function dashboardApiRoutes() {
  return new Hono<AppEnv>();
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
  r.use("/assets/*", serveStatic({ root: distDir }));
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
