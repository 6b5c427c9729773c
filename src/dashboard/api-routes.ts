import { Hono } from "hono";
import { requireScope, UNAUTHENTICATED } from "../auth/gate.js";
import type { AppEnv } from "../http/app-env.js";
import { ApiError, parseOrThrow } from "../http/errors.js";
import { modelView } from "../manage/models.js";
import { listEffectiveModels } from "../manage/registry.js";
import { requestLogs } from "../reports/logs.js";
import { latencyQuery } from "../reports/query.js";
import { modalityLatency } from "./modality-latency.js";
import { authEnabled } from "../services.js";
import { sessionTenantQuery } from "../sessions/params.js";
import { callDetail, callListQuery, listCalls } from "./calls.js";
import { dashboardLogsQuery, requestLogDetail } from "./log-detail.js";
import { costSeries, costSeriesQuery, defaultBucket, latencySeries, latencySeriesQuery } from "./series.js";
import { whoami } from "./whoami.js";

/** GET /api/models: every model with its source (yaml rows are read-only in the web app). */
export type ModelList = { models: ReturnType<typeof modelView>[] };

/**
 * Dashboard reads the web app needs beyond the spec's table: whoami, cost and latency series, log
 * status filter and detail, calls with legs, models with source. Read scope, tenant from the key.
 */
export function dashboardExtraRoutes() {
  const r = new Hono<AppEnv>();
  const read = requireScope("read");
  const db = (c: { var: AppEnv["Variables"] }) => c.var.services.database.db;

  // Any valid key may ask what it can do (an ingest-only key learns it cannot read). No key at all
  // is an anonymous 200 (authenticated: false: the web app's sign-in screen, without a failed
  // request in the console); a key that is refused is the usual 401.
  r.get("/api/whoami", (c) => {
    const enabled = authEnabled(c.var.services);
    if (c.var.auth === UNAUTHENTICATED) {
      if (c.req.header("authorization") === undefined) return c.json(whoami(c.var.auth, enabled, false));
      throw new ApiError("unauthorized", "a valid API key is required: Authorization: Bearer <key>");
    }
    return c.json(whoami(c.var.auth, enabled));
  });

  r.get("/api/costs/series", read, async (c) => {
    const q = parseOrThrow(costSeriesQuery, c.req.query(), "invalid query");
    const bucket = q.bucket ?? defaultBucket(q.period);
    return c.json(await costSeries(db(c), { period: q.period, project: q.project, bucket, tenantId: c.var.auth.tenantId }));
  });

  r.get("/api/latency/series", read, async (c) => {
    const q = parseOrThrow(latencySeriesQuery, c.req.query(), "invalid query");
    // Sketch merging costs per stored bucket: hours for a day, days beyond unless asked.
    const bucket = q.bucket ?? (q.period === "today" ? "hour" : "day");
    return c.json(await latencySeries(db(c), { ...q, bucket, tenantId: c.var.auth.tenantId }));
  });

  r.get("/api/latency/modalities", read, async (c) => {
    const q = parseOrThrow(latencyQuery, c.req.query(), "invalid query");
    return c.json(await modalityLatency(db(c), { ...q, tenantId: c.var.auth.tenantId }));
  });

  // Replaces the adapter's plain list: the same rows, plus ?status=.
  r.get("/api/logs", read, async (c) => {
    const q = parseOrThrow(dashboardLogsQuery, c.req.query(), "invalid query");
    return c.json(await requestLogs(db(c), { ...q, tenantId: c.var.auth.tenantId }));
  });

  r.get("/api/logs/:id", read, async (c) => {
    const tenant = sessionTenantQuery(c.req.query("tenant"));
    if (tenant === false) throw new ApiError("not_found", `no request ${c.req.param("id")}`);
    return c.json(await requestLogDetail(db(c), c.var.auth, c.req.param("id"), tenant));
  });

  r.get("/api/calls", read, async (c) => {
    const q = parseOrThrow(callListQuery, c.req.query(), "invalid query");
    return c.json(await listCalls(db(c), c.var.auth, q));
  });

  r.get("/api/calls/:ref", read, async (c) => c.json(await callDetail(db(c), c.var.auth, c.req.param("ref"))));

  r.get("/api/models", read, async (c) => {
    const body: ModelList = { models: (await listEffectiveModels(c.var.services)).map(modelView) };
    return c.json(body);
  });
  return r;
}
