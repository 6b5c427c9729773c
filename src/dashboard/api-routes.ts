import type { Context } from "hono";
import type { KeyGate } from "../auth/gate.js";
import type { ReadStore } from "../db/client.js";
import type { ConfigStore } from "../manage/registry.js";
import { z } from "zod";
import { authEnabled, UNAUTHENTICATED } from "../auth/gate.js";
import type { AppEnv } from "../http/app-env.js";
import { ApiError } from "../http/errors.js";
import { contractRouter, defineRead, defineRoute } from "../http/openapi.js";
import { modelView } from "../manage/models.js";
import { listEffectiveModels } from "../manage/registry.js";
import { requestLogs } from "../reports/logs.js";
import { latencyQuery } from "../reports/query.js";
import { RequestLogListSchema } from "../reports/schemas.js";
import { sessionTenantQuery } from "../sessions/params.js";
import { callDetail, callListQuery, listCalls } from "./calls.js";
import { dashboardLogsQuery, requestLogDetail } from "./log-detail.js";
import { modalityLatency } from "./modality-latency.js";
import {
  CallDetailSchema,
  CallRowSchema,
  CostSeriesSchema,
  DashboardModelListSchema,
  LatencySeriesSchema,
  ModalityLatencyReportSchema,
  type ModelList,
  RequestLogDetailSchema,
  WhoamiSchema,
} from "./schemas.js";
import { costSeries, costSeriesQuery, defaultBucket, latencySeries, latencySeriesQuery } from "./series.js";
import { whoami } from "./whoami.js";

/** GET /api/models: every model with its source (type from schemas.ts). */
export type { ModelList } from "./schemas.js";

const tag = "dashboard";

/**
 * What the dashboard's API routes read: reports from the read database (a replica when
 * DATABASE_READ_URL is set), the registry (yaml + the primary: the web app reads back what it just
 * saved), and the static keys (whoami also needs to know whether auth is on).
 */
export type DashboardRouteDeps = ConfigStore & ReadStore & Pick<KeyGate, "staticKeys">;

/**
 * Dashboard reads the web app needs beyond the public API (docs/api/dashboard.md): whoami, cost and latency series, log
 * status filter and detail, calls with legs, models with source. Read scope, tenant from the key.
 */
export function dashboardExtraRoutes(deps: DashboardRouteDeps) {
  const r = contractRouter();
  const db = (_c: Context<AppEnv>) => deps.readDatabase.db;

  // Any valid key may ask what it can do (an ingest-only key learns it cannot read). No key at all
  // is an anonymous 200 (authenticated: false: the web app's sign-in screen, without a failed
  // request in the console); a key that is refused is the usual 401.
  defineRoute(
    r,
    {
      method: "get",
      path: "/api/whoami",
      tag,
      summary: "What the presented key may do (no key: an anonymous answer, authenticated false)",
      scope: null,
      responses: {
        200: { description: "the key's rights", schema: WhoamiSchema },
        401: { description: "a key was presented and refused" },
      },
    },
    (c) => {
      const enabled = authEnabled(deps);
      if (c.var.auth === UNAUTHENTICATED) {
        if (c.req.header("authorization") === undefined) return c.json(whoami(c.var.auth, enabled, false));
        throw new ApiError("unauthorized", "a valid API key is required: Authorization: Bearer <key>");
      }
      return c.json(whoami(c.var.auth, enabled));
    },
  );

  defineRead(
    r,
    { path: "/api/costs/series", tag, summary: "Spend per hour or day bucket, from the rollups", description: "Whole buckets: the first may start before a rolling window does, so the series can sum to a little more than GET /api/costs.", query: costSeriesQuery, response: { description: "the series", schema: CostSeriesSchema } },
    (q, auth) => costSeries(deps.readDatabase.db, { period: q.period, project: q.project, bucket: q.bucket ?? defaultBucket(q.period), tenantId: auth.tenantId }),
  );

  defineRead(
    r,
    { path: "/api/latency/series", tag, summary: "p50/p95 TTFB and total latency per hour or day bucket, probe traffic excluded", query: latencySeriesQuery, response: { description: "the series", schema: LatencySeriesSchema } },
    // Sketch merging costs per stored bucket: hours for a day, days beyond unless asked.
    (q, auth) => latencySeries(deps.readDatabase.db, { ...q, bucket: q.bucket ?? (q.period === "today" ? "hour" : "day"), tenantId: auth.tenantId }),
  );

  defineRead(
    r,
    { path: "/api/latency/modalities", tag, summary: "p50/p95 per modality (the models' sketches merged), probe traffic excluded", query: latencyQuery, response: { description: "per modality", schema: ModalityLatencyReportSchema } },
    (query, auth) => modalityLatency(deps.readDatabase.db, { ...query, tenantId: auth.tenantId }),
  );

  // Replaces the adapter's plain list: the same rows, plus ?status=.
  defineRead(
    r,
    { path: "/api/logs", tag, summary: "The newest request records, as GET /v1/logs, with a status filter", query: dashboardLogsQuery, response: { description: "request records, newest first", schema: RequestLogListSchema } },
    (query, auth) => requestLogs(deps.readDatabase.db, { ...query, tenantId: auth.tenantId }),
  );

  defineRoute(
    r,
    {
      method: "get",
      path: "/api/logs/{id}",
      tag,
      summary: "One request record with units, pricing and metadata",
      scope: "read",
      params: z.object({ id: z.string().describe("the request id (a UUID)") }),
      query: z.object({
        tenant: z.string().optional().describe("operators: the tenant whose row to show when several tenants used the id (empty: the untenanted row)"),
      }),
      responses: {
        200: { description: "the record", schema: RequestLogDetailSchema },
        409: { description: "the id was used by several tenants; details.tenants lists them, pick one with ?tenant=" },
      },
    },
    async (c, { params, query }) => {
      const tenant = sessionTenantQuery(query.tenant);
      if (tenant === false) throw new ApiError("not_found", `no request ${params.id}`);
      return c.json(await requestLogDetail(db(c), c.var.auth, params.id, tenant));
    },
  );

  defineRead(
    r,
    { path: "/api/calls", tag, summary: "Calls (LiveKit rooms) newest first, with their legs' summary", query: callListQuery, response: { description: "calls", schema: z.array(CallRowSchema) } },
    (query, auth) => listCalls(deps.readDatabase.db, auth, query),
  );

  defineRoute(
    r,
    {
      method: "get",
      path: "/api/calls/{ref}",
      tag,
      summary: "One call with its legs",
      scope: "read",
      params: z.object({ ref: z.string().describe("room sid or room name") }),
      responses: { 200: { description: "the call", schema: CallDetailSchema } },
    },
    async (c, { params }) => c.json(await callDetail(db(c), c.var.auth, params.ref)),
  );

  defineRoute(
    r,
    {
      method: "get",
      path: "/api/models",
      tag,
      summary: "Every model with its source (yaml rows are read-only in the web app)",
      scope: "read",
      responses: { 200: { description: "models", schema: DashboardModelListSchema } },
    },
    async (c) => {
      const body: ModelList = { models: (await listEffectiveModels(deps)).map(modelView) };
      return c.json(body);
    },
  );
  return r;
}
