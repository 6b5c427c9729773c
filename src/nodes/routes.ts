import { Hono } from "hono";
import { createMiddleware } from "hono/factory";
import { z } from "zod";
import { requireScope } from "../auth/gate.js";
import { ApiError, parseOrThrow } from "../http/errors.js";
import type { AppEnv } from "../http/app-env.js";
import { listNodeSamples, listNodes } from "./queries.js";

export const NODE_SAMPLES_LIMIT_MAX = 1000;
export const NODE_SAMPLES_LIMIT_DEFAULT = 100;

const samplesQuery = z.object({
  metric: z.string().min(1).max(200).regex(/^[a-zA-Z_:][a-zA-Z0-9_:]*$/, "must be a metric name").optional(),
  since: z.iso.datetime({ offset: true }).transform((s) => new Date(s)).optional(),
  limit: z
    .string()
    .regex(/^\d{1,16}$/, "limit must be a whole number")
    .transform(Number)
    .pipe(z.number().int().min(1).max(NODE_SAMPLES_LIMIT_MAX))
    .default(NODE_SAMPLES_LIMIT_DEFAULT),
});

const operatorOnly = createMiddleware<AppEnv>(async (c, next) => {
  if (c.var.auth.tenantId !== null) throw new ApiError("forbidden", "node metrics are readable by operator keys only");
  await next();
});

/**
 * GET /v1/nodes and /v1/nodes/{node}/samples: what the scrape worker stored. Node metrics are
 * infrastructure, not tenant data: operator keys only (a tenant-bound key gets 403).
 */
export function nodeRoutes() {
  const r = new Hono<AppEnv>();
  const read = requireScope("read");
  r.get("/v1/nodes", read, operatorOnly, async (c) => c.json(await listNodes(c.var.services.database.db)));

  r.get("/v1/nodes/:node/samples", read, operatorOnly, async (c) => {
    const q = parseOrThrow(samplesQuery, c.req.query());
    const node = c.req.param("node");
    if (!/^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/.test(node)) throw new ApiError("not_found", "no node with this name");
    return c.json(await listNodeSamples(c.var.services.database.db, { node, ...q }));
  });
  return r;
}
