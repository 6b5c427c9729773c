import { createMiddleware } from "hono/factory";
import type { AppEnv } from "./app-env.js";

/** One log line per request: method, matched route, status, duration. Never headers or bodies. */
export const requestLog = createMiddleware<AppEnv>(async (c, next) => {
  const started = performance.now();
  await next();
  const log = c.var.log;
  if (!log.isLevelEnabled("info")) return;
  log.info(
    {
      method: c.req.method,
      route: c.req.routePath,
      path: c.req.path,
      status: c.res.status,
      duration_ms: Math.round((performance.now() - started) * 100) / 100,
      actor: c.var.auth?.actor,
    },
    "request",
  );
});
