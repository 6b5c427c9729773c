import type { Context } from "hono";
import { z } from "zod";
import { SessionDeadAirSchema, SessionReplaySchema, SessionTranscriptSchema, SessionTurnsSchema } from "../dashboard/schemas.js";
import type { Database, Db, ReadStore } from "../db/client.js";
import type { Config } from "../config/schema.js";
import type { AppEnv } from "../http/app-env.js";
import { contractRouter, defineRoute } from "../http/openapi.js";
import { nodeRoutes } from "../nodes/routes.js";
import { sessionDeadAir, sessionReplay, sessionTranscript, sessionTurns } from "./drilldowns.js";
import { NEXT_CURSOR_HEADER, type SessionListQuery, roomLatencyQuery, sessionListQuery } from "./params.js";
import { roomLatencyRecord, sessionDetail, sessionPage, visibleSession as visibleSessionOf } from "./answers.js";
import type { SessionDbRow } from "./queries.js";
import { RoomLatencySchema, roomParams, SessionDetailSchema, SessionRowSchema, sessionParams } from "./schemas.js";

type Ctx = Context<AppEnv>;

/**
 * GET /v1/sessions, /v1/sessions/{id}, /v1/rooms/{room}/latency and the dashboard's session reads. /v1/sessions and /api/sessions answer the same
 * rows. Every route needs read scope and is tenant-scoped by the key (never by a parameter).
 */
/**
 * What the session reads use: the read database, whether cost tracking (and so session recording)
 * is on, and the store (the node routes mounted here).
 */
export interface SessionRouteDeps extends ReadStore {
  database: Database;
  config: Pick<Config, "cost_tracking">;
}

export function sessionRoutes(deps: SessionRouteDeps) {
  const r = contractRouter();
  const listHandler = async (c: Ctx, { query: q }: { query: SessionListQuery }) => {
    const page = await sessionPage(deps, c.var.auth, q);
    if (page.next_cursor) c.header(NEXT_CURSOR_HEADER, page.next_cursor);
    return c.json(page.sessions);
  };
  const detailHandler = async (c: Ctx) => c.json(await sessionDetail(deps, c.var.auth, c.req.param("session_id") ?? "", c.req.query("tenant")));
  const visibleSession = (c: Ctx) => visibleSessionOf(deps, c.var.auth, c.req.param("session_id") ?? "", c.req.query("tenant"));
  const tag = "sessions";

  defineRoute(
    r,
    {
      method: "get",
      path: "/v1/sessions",
      tag,
      summary: "Sessions, newest first, one keyset page",
      description: `When more rows follow, the answer carries ${NEXT_CURSOR_HEADER}: pass it back as ?cursor= with the same filters. With cost tracking off the list is empty.`,
      scope: "read",
      query: sessionListQuery,
      responses: { 200: { description: "a page of session rows", schema: z.array(SessionRowSchema) } },
    },
    listHandler,
  );
  defineRoute(
    r,
    { method: "get", path: "/api/sessions", tag: "dashboard", summary: "Sessions, as GET /v1/sessions (the web app's list)", scope: "read", query: sessionListQuery, responses: { 200: { description: "a page of session rows", schema: z.array(SessionRowSchema) } } },
    listHandler,
  );
  // Every read of one session: the same parameters and the same lookup (visibleSession: its 404 and 409).
  const sessionRead = (path: string, routeTag: string, summary: string, schema: z.ZodType, answer: (c: Ctx) => Promise<Response>) =>
    defineRoute(
      r,
      {
        method: "get",
        path,
        tag: routeTag,
        summary,
        scope: "read",
        params: sessionParams,
        query: sessionTenantParam,
        responses: {
          200: { description: summary, schema },
          404: { description: "no session with this id visible to the key (missing and another tenant's answer the same)" },
          409: { description: "an operator key and an id several tenants used: details.tenants names them; add ?tenant=" },
        },
      },
      answer,
    );
  sessionRead("/v1/sessions/{session_id}", tag, "One session with its cost per modality and its providers", SessionDetailSchema, detailHandler);
  // The web app's session reads.
  const dashboardRead = (path: string, summary: string, schema: z.ZodType, answer: (c: Ctx) => Promise<Response>) =>
    sessionRead(`/api/sessions/{session_id}${path}`, "dashboard", summary, schema, answer);
  dashboardRead("", "One session with its cost per modality and its providers, as GET /v1/sessions/{session_id}", SessionDetailSchema, detailHandler);
  // Each drill-down's answer type is held to its schema at compile time too.
  const drill = <S extends z.ZodType>(path: string, summary: string, schema: S, read: (d: Db, s: SessionDbRow) => Promise<z.output<S>>) =>
    dashboardRead(path, summary, schema, async (c) => c.json((await read(deps.readDatabase.db, await visibleSession(c))) as object));
  drill("/turns", "The session's turns by turn_index (at most 5000)", SessionTurnsSchema, sessionTurns);
  drill("/dead-air", "The session's dead-air events by start (at most 5000)", SessionDeadAirSchema, sessionDeadAir);
  drill("/transcript", "Who spoke when (no utterance text is stored)", SessionTranscriptSchema, sessionTranscript);
  drill("/replay", "Requests, speech and dead air of the session on one epoch-ms time line", SessionReplaySchema, sessionReplay);

  defineRoute(
    r,
    {
      method: "get",
      path: "/v1/rooms/{room}/latency",
      tag,
      summary: "A room's turns and whole-call latency summaries",
      description: "since_turn narrows only turns; the aggregates cover the whole call and leave probe traffic out unless include_probe.",
      scope: "read",
      params: roomParams,
      query: roomLatencyQuery,
      responses: {
        200: { description: "the room latency record", schema: RoomLatencySchema },
        404: { description: "no row of the caller's tenant names the room (another tenant's room answers the same)" },
      },
    },
    async (c, { params, query }) => c.json(await roomLatencyRecord(deps, c.var.auth, params.room, query)),
  );

  r.route("/", nodeRoutes(deps));
  return r;
}

/** `?tenant=` of the session reads, as documented (visibleSession reads it; absent, empty or a tenant id). */
const sessionTenantParam = z.object({
  tenant: z.string().optional().describe("an operator picks one tenant's session of a shared id (empty: the untenanted one); a tenant key can only narrow"),
});

