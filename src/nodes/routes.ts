import { createMiddleware } from "hono/factory";
import type { Database } from "../db/client.js";
import { z } from "zod";
import { ApiError } from "../http/errors.js";
import type { AppEnv } from "../http/app-env.js";
import { contractRouter, defineRoute } from "../http/openapi.js";
import { listNodeSamples, listNodes } from "./queries.js";

export const NODE_SAMPLES_LIMIT_MAX = 1000;
export const NODE_SAMPLES_LIMIT_DEFAULT = 100;

const samplesQuery = z.object({
  metric: z
    .string()
    .min(1)
    .max(200)
    .regex(/^[a-zA-Z_:][a-zA-Z0-9_:]*$/, "must be a metric name")
    .optional()
    .describe("a Prometheus metric name"),
  since: z.iso
    .datetime({ offset: true })
    .transform((s) => new Date(s))
    .optional()
    .describe("ISO date-time; samples at or after it"),
  limit: z
    .string()
    .regex(/^\d{1,16}$/, "limit must be a whole number")
    .transform(Number)
    .pipe(z.number().int().min(1).max(NODE_SAMPLES_LIMIT_MAX))
    .default(NODE_SAMPLES_LIMIT_DEFAULT)
    .describe(`1-${NODE_SAMPLES_LIMIT_MAX}, default ${NODE_SAMPLES_LIMIT_DEFAULT}`),
});

const NodeList = z.array(
  z.object({
    node: z.string(),
    sources: z
      .record(z.string(), z.object({ up: z.number().describe("1 the last scrape succeeded, 0 it failed"), last_scrape_at: z.string() }))
      .describe("per source (livekit-server, livekit-sip, host-exporter): the last up sample"),
  }),
);

const SampleList = z.array(
  z.object({
    ts: z.string(),
    source: z.string(),
    metric: z.string(),
    labels: z.record(z.string(), z.string()),
    value: z.number(),
  }),
);

const operatorOnly = createMiddleware<AppEnv>(async (c, next) => {
  if (c.var.auth.tenantId !== null) throw new ApiError("forbidden", "node metrics are readable by operator keys only");
  await next();
});

/**
 * GET /v1/nodes and /v1/nodes/{node}/samples: what the scrape worker stored. Node metrics are
 * infrastructure, not tenant data: operator keys only (a tenant-bound key gets 403).
 */
export function nodeRoutes(deps: { database: Database }) {
  const r = contractRouter();
  const common = { tag: "nodes", scope: "read", middleware: [operatorOnly] } as const;

  defineRoute(
    r,
    {
      ...common,
      method: "get",
      path: "/v1/nodes",
      summary: "Scraped nodes and the last up of each source (operator keys)",
      responses: { 200: { description: "the nodes", schema: NodeList } },
    },
    async (c) => c.json(await listNodes(deps.database.db)),
  );

  defineRoute(
    r,
    {
      ...common,
      method: "get",
      path: "/v1/nodes/{node}/samples",
      summary: "A node's stored samples, newest first (operator keys)",
      params: z.object({ node: z.string().describe("the node name of VOXGATE_NODE_SCRAPE_TARGETS") }),
      query: samplesQuery,
      responses: { 200: { description: "the samples", schema: SampleList } },
    },
    async (c, { params, query: q }) => {
      const node = params.node;
      if (!/^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/.test(node)) throw new ApiError("not_found", "no node with this name");
      return c.json(await listNodeSamples(deps.database.db, { node, ...q }));
    },
  );
  return r;
}
