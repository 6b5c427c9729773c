import { Hono } from "hono";
import { requireScope } from "../auth/gate.js";
import type { AppEnv } from "../http/app-env.js";
import { readBatch } from "./batch.js";
import { storeDeadAir } from "./dead-air.js";
import { ingestRequests } from "./ingest-requests.js";
import { storeTurns } from "./turns.js";

/**
 * Telemetry write path (spec endpoints 42-44). Tenant always from the key; each batch is one
 * transaction and the answer is sent only after it committed.
 */
export function ingestRoutes() {
  const app = new Hono<AppEnv>();

  app.post("/v1/ingest", requireScope("ingest"), async (c) => {
    const { services, auth } = c.var;
    const batch = await readBatch(c, services.config.serve.body_limit_bytes);
    return c.json(await ingestRequests(services, auth.tenantId, batch), 200);
  });

  app.post("/v1/ingest/turns", requireScope("ingest"), async (c) => {
    const { services, auth } = c.var;
    const batch = await readBatch(c, services.config.serve.body_limit_bytes);
    return c.json(await storeTurns(services.database.db, auth.tenantId, batch), 200);
  });

  app.post("/v1/ingest/dead-air", requireScope("ingest"), async (c) => {
    const { services, auth } = c.var;
    const batch = await readBatch(c, services.config.serve.body_limit_bytes);
    return c.json(await storeDeadAir(services.database.db, auth.tenantId, batch), 200);
  });

  return app;
}
