import { readJson } from "../http/body.js";
import type { Database } from "../db/client.js";
import { ApiError, parseOrThrow } from "../http/errors.js";
import { contractRouter, defineRead, defineRoute } from "../http/openapi.js";
import { fleetIndex, fleetIndexQuery } from "./index-queries.js";
import { FleetIndexSchema, HeartbeatAcceptedSchema, type RosterResponse, RosterSchema } from "./schemas.js";
import { heartbeatSchema, listRoster, recordHeartbeat, ROSTER_AGEING_SECONDS, rosterEntry } from "./presence.js";

/** Heartbeat bodies are one small object; anything bigger is not a snapshot. */
export const HEARTBEAT_BODY_LIMIT_BYTES = 64 * 1024;

/** Fleet presence (docs/api/fleet.md): heartbeat upsert and the live roster; the fleet index /api/agents. */
export function fleetRoutes(deps: { database: Database }) {
  const app = contractRouter();

  // The body is read here with the heartbeat's own size limit; the schema documents it.
  defineRoute(
    app,
    {
      method: "post",
      path: "/v1/agents/heartbeat",
      tag: "fleet",
      summary: "A worker's presence snapshot (upserted per tenant and agent_id; the roster keeps it 45 s)",
      scope: "ingest",
      body: heartbeatSchema,
      bodyMode: "document",
      responses: { 202: { description: "recorded", schema: HeartbeatAcceptedSchema } },
    },
    async (c) => {
      const { auth } = c.var;
      const body = await readJson(c, Math.min(HEARTBEAT_BODY_LIMIT_BYTES, c.var.bodyLimitBytes));
      if (body === null || typeof body !== "object" || Array.isArray(body)) {
        throw new ApiError("validation_failed", "the body must be a worker presence snapshot object", [
          { path: "(body)", message: "expected object" },
        ]);
      }
      const hb = parseOrThrow(heartbeatSchema, body, "invalid heartbeat");
      await recordHeartbeat(deps.database.db, auth.tenantId, hb);
      return c.json({ status: "accepted" as const }, 202);
    },
  );

  defineRoute(
    app,
    {
      method: "get",
      path: "/v1/agents",
      tag: "fleet",
      summary: "The live roster: workers heard from in the last 45 s",
      scope: "read",
      responses: { 200: { description: "the roster", schema: RosterSchema } },
    },
    async (c) => {
      const { auth } = c.var;
      const rows = await listRoster(deps.database.db, auth);
      const now = new Date();
      const body: RosterResponse = { agents: rows.map((r) => rosterEntry(r, now)), count: rows.length, ageing_seconds: ROSTER_AGEING_SECONDS };
      return c.json(body);
    },
  );

  // The fleet index (dashboard API): per-agent cost, p95 latency and probe traffic over a period.
  defineRead(
    app,
    { path: "/api/agents", tag: "dashboard", summary: "The fleet index: per-agent cost, p95 latency, errors and probe traffic over a period, one page", query: fleetIndexQuery, response: { description: "one page of agents", schema: FleetIndexSchema } },
    (query, auth) => fleetIndex(deps.database.db, { ...query, tenantId: auth.tenantId }),
  );

  return app;
}
