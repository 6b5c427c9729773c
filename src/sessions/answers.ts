import type { TenantScope } from "../auth/context.js";
import { DomainError } from "../errors.js";
import type { Config } from "../config/schema.js";
import type { ReadStore } from "../db/client.js";
import { encodeCursor, isLookupSafe, roomNotFound, type SessionListQuery, sessionNotFound, sessionTenantQuery } from "./params.js";
import { findSessions, getSessionDetail, listSessions, sessionRow } from "./queries.js";
import { roomLatency } from "./room-latency.js";

/**
 * The session reads as plain functions of (services, the caller's tenant, the parsed query): what
 * the /v1/sessions and /v1/rooms routes and the MCP tools answer for the same query. They read the
 * read database (a replica when DATABASE_READ_URL is set).
 */
type Deps = ReadStore & { config: Pick<Config, "cost_tracking"> };

/** GET /v1/sessions: one keyset page; `next_cursor` is what the route sends as X-Next-Cursor. */
export async function sessionPage(services: Deps, auth: TenantScope, q: SessionListQuery) {
  // Cost tracking off: nothing is recorded as a session, and the answer is an empty array (docs/api/sessions.md).
  if (!services.config.cost_tracking.enabled) return { sessions: [], next_cursor: null };
  const page = await listSessions(services.readDatabase.db, { ...q, tenantId: auth.tenantId });
  return { sessions: page.rows.map(sessionRow), next_cursor: page.next ? encodeCursor(page.next) : null };
}

/**
 * The session row when the caller may see it; otherwise the one 404 (missing = another tenant's).
 * Session ids are unique per tenant, so an operator may find several: `tenant` (empty for the
 * untenanted one) picks one, and without it an id two tenants used is a 409 naming them.
 */
export async function visibleSession(services: Deps, auth: TenantScope, id: string, tenantParam: string | undefined) {
  const tenant = sessionTenantQuery(tenantParam);
  if (!services.config.cost_tracking.enabled || !isLookupSafe(id) || tenant === false) throw sessionNotFound();
  const rows = await findSessions(services.readDatabase.db, { tenantId: auth.tenantId, id, tenant });
  const [row] = rows;
  if (!row) throw sessionNotFound();
  if (rows.length > 1) {
    const tenants = rows.map((r) => r.tenantId);
    throw new DomainError("conflict", `session id ${id} was used by ${rows.length} tenants; add ?tenant=<tenant_id> (?tenant= for the untenanted one)`, { tenants });
  }
  return row;
}

/** GET /v1/sessions/{session_id}. */
export async function sessionDetail(services: Deps, auth: TenantScope, id: string, tenantParam: string | undefined) {
  return getSessionDetail(services.readDatabase.db, await visibleSession(services, auth, id, tenantParam));
}

/** GET /v1/rooms/{room}/latency. */
export async function roomLatencyRecord(services: Deps, auth: TenantScope, room: string, q: { since_turn?: number; include_probe: boolean }) {
  if (!isLookupSafe(room)) throw roomNotFound();
  const record = await roomLatency(services.readDatabase.db, { tenantId: auth.tenantId, room, sinceTurn: q.since_turn, includeProbe: q.include_probe });
  if (!record) throw roomNotFound();
  return record;
}
