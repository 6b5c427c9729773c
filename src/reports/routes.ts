import type { OpenAPIHono } from "@hono/zod-openapi";
import { requireScope } from "../auth/gate.js";
import type { Permission } from "../auth/context.js";
import { DomainError } from "../errors.js";
import type { AppEnv } from "../http/app-env.js";
import { contractRouter, defineRead, defineRoute } from "../http/openapi.js";
import { type MetricsSources, metricsExposition } from "../metrics/collect.js";
import { costReport } from "./costs.js";
import { latencyReport } from "./latency.js";
import { exportChunks, exportQuery } from "./export.js";
import { requestLogs } from "./logs.js";
import { costsQuery, latencyQuery, logsQuery } from "./query.js";
import { CostReportSchema, LatencyReportSchema, RequestLogListSchema } from "./schemas.js";

/** Text exposition format 0.0.4 (what Prometheus scrapes). */
export const METRICS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8";

/**
 * These paths were gated for every method (`use`), so another method on them answers the gate's
 * 401/403 before the catch-all 404; defineRoute gates its own method only, and this keeps the rest.
 */
export function gateOtherMethods(r: OpenAPIHono<AppEnv>, paths: readonly string[], scope: Permission): void {
  const gate = requireScope(scope);
  for (const path of paths) r.use(path, (c, next) => (c.req.method === "GET" || c.req.method === "HEAD" ? next() : gate(c, next)));
}

const tag = "reports";

/** GET /v1/costs, /v1/latency, /v1/logs, /v1/metrics: read scope, scoped to the key's tenant. */
export function readRoutes(deps: MetricsSources) {
  const r = contractRouter();
  gateOtherMethods(r, ["/v1/costs", "/v1/costs/export", "/v1/latency", "/v1/logs", "/v1/metrics"], "read");

  defineRead(
    r,
    { path: "/v1/costs", tag, summary: "Spend over a period, with breakdowns by provider, model and project", query: costsQuery, response: { description: "the cost report", schema: CostReportSchema } },
    (query, auth) => costReport(deps.readDatabase.db, { ...query, tenantId: auth.tenantId }),
  );

  defineRead(
    r,
    { path: "/v1/latency", tag, summary: "TTFB and total latency percentiles per model (probe traffic excluded)", query: latencyQuery, response: { description: "the latency report", schema: LatencyReportSchema } },
    (query, auth) => latencyReport(deps.readDatabase.db, { ...query, tenantId: auth.tenantId }),
  );

  defineRead(
    r,
    { path: "/v1/logs", tag, summary: "The newest request records", query: logsQuery, response: { description: "request records, newest first", schema: RequestLogListSchema } },
    (query, auth) => requestLogs(deps.readDatabase.db, { ...query, tenantId: auth.tenantId }),
  );

  defineRoute(
    r,
    {
      method: "get",
      path: "/v1/costs/export",
      tag,
      summary: "Every request record in [from, to) as CSV (a header row, one row per record) or one JSON array, streamed",
      description: "Oldest first, the key's tenant only. Amounts are USD: exact decimal text in CSV, numbers in JSON. The answer is written as it is read, in pages, so any window can be exported.",
      scope: "read",
      query: exportQuery,
      queryMessage: "invalid query",
      responses: { 200: { description: "the records (format=json: one JSON array)", contentType: "text/csv", otherContentTypes: ["application/json"] } },
    },
    (c, { query }) => {
      const { from, to } = query;
      if (!(from < to)) throw new DomainError("validation_failed", "from must be before to", [{ path: "from", message: "must be before to" }]);
      const chunks = exportChunks(deps.readDatabase.db, { tenantId: c.var.auth.tenantId }, query);
      const encoder = new TextEncoder();
      const body = new ReadableStream<Uint8Array>({
        async pull(controller) {
          try {
            const next = await chunks.next();
            if (next.done) controller.close();
            else controller.enqueue(encoder.encode(next.value));
          } catch (err) {
            // Headers are gone: the stream ends in error, so the client sees a cut answer, never a complete-looking one.
            c.var.log.error({ err }, "cost export failed mid-stream");
            controller.error(err);
          }
        },
        async cancel() {
          await chunks.return(undefined);
        },
      });
      const csv = query.format === "csv";
      const name = `voxgate-costs-${from.toISOString().slice(0, 10)}-${to.toISOString().slice(0, 10)}.${query.format}`;
      return new Response(body, {
        status: 200,
        headers: {
          "content-type": csv ? "text/csv; charset=utf-8" : "application/json; charset=utf-8",
          "content-disposition": `attachment; filename="${name}"`,
        },
      });
    },
  );

  defineRoute(
    r,
    {
      method: "get",
      path: "/v1/metrics",
      tag,
      summary: "Prometheus text exposition: rolling 24 h cost and latency gauges, uptime, providers, the newest gated diagnostics run",
      scope: "read",
      responses: { 200: { description: "text exposition format 0.0.4", contentType: "text/plain" } },
    },
    async (c) => {
      const text = await metricsExposition(deps, { tenantId: c.var.auth.tenantId });
      return c.body(text, 200, { "content-type": METRICS_CONTENT_TYPE });
    },
  );
  return r;
}
