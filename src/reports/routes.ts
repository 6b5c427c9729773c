import { Hono } from "hono";
import { requireScope } from "../auth/gate.js";
import type { AppEnv } from "../http/app-env.js";
import { parseOrThrow } from "../http/errors.js";
import { metricsExposition } from "../metrics/collect.js";
import { costReport } from "./costs.js";
import { latencyReport } from "./latency.js";
import { requestLogs } from "./logs.js";
import { costsQuery, latencyQuery, logsQuery } from "./query.js";

/** Text exposition format 0.0.4 (what Prometheus scrapes). */
export const METRICS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8";

/** GET /v1/costs, /v1/latency, /v1/logs, /v1/metrics: read scope, scoped to the key's tenant. */
export function readRoutes() {
  const r = new Hono<AppEnv>();
  r.use("/v1/costs", requireScope("read"));
  r.use("/v1/latency", requireScope("read"));
  r.use("/v1/logs", requireScope("read"));
  r.use("/v1/metrics", requireScope("read"));

  r.get("/v1/costs", async (c) => {
    const q = parseOrThrow(costsQuery, c.req.query(), "invalid query");
    return c.json(await costReport(c.var.services.database.db, { ...q, tenantId: c.var.auth.tenantId }));
  });

  r.get("/v1/latency", async (c) => {
    const q = parseOrThrow(latencyQuery, c.req.query(), "invalid query");
    return c.json(await latencyReport(c.var.services.database.db, { ...q, tenantId: c.var.auth.tenantId }));
  });

  r.get("/v1/logs", async (c) => {
    const q = parseOrThrow(logsQuery, c.req.query(), "invalid query");
    return c.json(await requestLogs(c.var.services.database.db, { ...q, tenantId: c.var.auth.tenantId }));
  });

  r.get("/v1/metrics", async (c) => {
    const text = await metricsExposition(c.var.services, { tenantId: c.var.auth.tenantId });
    return c.body(text, 200, { "content-type": METRICS_CONTENT_TYPE });
  });
  return r;
}
