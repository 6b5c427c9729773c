import type { z } from "zod";
import type { IngestDeps } from "./ingest-requests.js";
import { contractRouter, defineRoute } from "../http/openapi.js";
import { readBatch } from "./batch.js";
import { storeDeadAir } from "./dead-air.js";
import { ingestRequests } from "./ingest-requests.js";
import { DeadAirBatch, IngestBatch, IngestResultSchema, TimelineResultSchema, TurnBatch } from "./schemas.js";
import { storeTurns } from "./turns.js";

/** Over the batch cap (checked on the raw text before any parse). */
const overCap = { 413: { description: "payload_too_large: over the body size limit, or over the batch cap (details.batch_cap)" } };

/**
 * Telemetry write path (docs/api/ingest.md). Tenant always from the key; each batch is one
 * transaction and the answer is sent only after it committed. The bodies are declared for the
 * document only (bodyMode "document"): readBatch reads them and each row is validated once, by the
 * store function (the common request record without zod).
 */
/** Ingest writes rows, rated with the rate card in memory. */
export function ingestRoutes(deps: IngestDeps) {
  const r = contractRouter();
  const route = (path: string, summary: string, body: z.ZodType, answer: z.ZodType) =>
    ({
      method: "post",
      path,
      tag: "ingest",
      summary,
      scope: "ingest",
      body,
      bodyMode: "document",
      responses: { 200: { description: "stored (after commit)", schema: answer }, ...overCap },
    }) as const;

  defineRoute(r, route("/v1/ingest", "Store a batch of request records", IngestBatch, IngestResultSchema), async (c) => {
    const { auth } = c.var;
    const batch = await readBatch(c, c.var.bodyLimitBytes);
    return c.json(await ingestRequests(deps, auth.tenantId, batch), 200);
  });

  defineRoute(r, route("/v1/ingest/turns", "Store a batch of turns", TurnBatch, TimelineResultSchema), async (c) => {
    const { auth } = c.var;
    const batch = await readBatch(c, c.var.bodyLimitBytes);
    return c.json(await storeTurns(deps.database.db, auth.tenantId, batch), 200);
  });

  defineRoute(r, route("/v1/ingest/dead-air", "Store a batch of dead-air events", DeadAirBatch, TimelineResultSchema), async (c) => {
    const { auth } = c.var;
    const batch = await readBatch(c, c.var.bodyLimitBytes);
    return c.json(await storeDeadAir(deps.database.db, auth.tenantId, batch), 200);
  });

  return r;
}
