import { and, asc, desc, eq, gte, type SQL, sql } from "drizzle-orm";
import { ownedBy, type TenantScope, tenantCondition } from "../auth/context.js";
import type { Db } from "../db/client.js";
import { moneyNumber } from "../money.js";
import { requests, sessions } from "../db/schema/index.js";
import type { SessionCursor } from "./params.js";

export type SessionDbRow = typeof sessions.$inferSelect;

/** The public session row (docs/api/sessions.md), plus room_name and agent_id. */
export function sessionRow(r: SessionDbRow) {
  return {
    id: r.id,
    project: r.project,
    started_at: r.startedAt.toISOString(),
    ended_at: r.endedAt.toISOString(),
    modalities: [...r.modalities].sort(),
    request_count: r.requestCount,
    total_cost_usd: moneyNumber(r.totalCostUsd),
    tenant_id: r.tenantId,
    room_name: r.roomName,
    agent_id: r.agentId,
  };
}
export type SessionRow = ReturnType<typeof sessionRow>;

const STARTED_AT_MICROS = sql<string>`(extract(epoch from ${sessions.startedAt}) * 1000000)::bigint::text`;

export interface ListSessionsArgs extends TenantScope {
  project?: string;
  room?: string;
  since?: Date;
  limit: number;
  cursor?: SessionCursor;
}

/**
 * One page of sessions, newest first by (started_at, id). Keyset pagination: the row after the
 * cursor is found by index, so page 1000 costs what page 1 costs. Fetches limit+1 to know if more exist.
 */
export async function listSessions(db: Db, a: ListSessionsArgs): Promise<{ rows: SessionDbRow[]; next: SessionCursor | null }> {
  const where: (SQL | undefined)[] = [tenantCondition(sessions.tenantId, a)];
  if (a.project !== undefined) where.push(eq(sessions.project, a.project));
  if (a.room !== undefined) where.push(eq(sessions.roomName, a.room));
  if (a.since !== undefined) where.push(gte(sessions.startedAt, a.since));
  if (a.cursor) {
    const at = sql`'epoch'::timestamptz + ${a.cursor.startedAtMicros}::bigint * interval '1 microsecond'`;
    where.push(sql`(${sessions.startedAt}, ${sessions.id}) < (${at}, ${a.cursor.id})`);
  }
  const rows = await db
    .select({ row: sessions, micros: STARTED_AT_MICROS })
    .from(sessions)
    .where(and(...where))
    .orderBy(desc(sessions.startedAt), desc(sessions.id))
    .limit(a.limit + 1);
  const more = rows.length > a.limit;
  const page = more ? rows.slice(0, a.limit) : rows;
  const last = page.at(-1);
  return {
    rows: page.map((p) => p.row),
    next: more && last ? { startedAtMicros: String(last.micros), id: last.row.id } : null,
  };
}

/** A session id as the caller addresses it: `tenant` narrows an operator's lookup (null = untenanted). */
export interface SessionLookup extends TenantScope {
  id: string;
  tenant?: string | null;
}

/** Most sessions one id can name for an operator (each tenant may use it once); enough to list the tenants. */
const SESSIONS_PER_ID_MAX = 20;

/**
 * The sessions with this id the caller may see: none (missing and another tenant's look the same),
 * one, or for an operator several, when tenants used the same id (session ids are unique per tenant).
 */
export async function findSessions(db: Db, a: SessionLookup): Promise<SessionDbRow[]> {
  return db
    .select()
    .from(sessions)
    .where(and(eq(sessions.id, a.id), tenantCondition(sessions.tenantId, a), a.tenant === undefined ? undefined : ownedBy(sessions.tenantId, a.tenant)))
    .orderBy(sql`${sessions.tenantId} nulls first`)
    .limit(SESSIONS_PER_ID_MAX);
}

/**
 * Session detail: the row plus `by_modality` ({<modality>: {cost, request_count}}, cost summed in
 * SQL from requests.cost_usd) and `providers` (distinct, sorted), both from the session's own
 * requests (its tenant's, whoever reads it).
 */
export async function getSessionDetail(db: Db, row: SessionDbRow) {
  const scope = and(eq(requests.sessionId, row.id), ownedBy(requests.tenantId, row.tenantId));
  const [byModality, providerRows] = await Promise.all([
    db
      .select({
        modality: requests.modality,
        cost: sql<string>`coalesce(sum(${requests.costUsd}), 0)`,
        requestCount: sql<number>`count(*)::int`,
      })
      .from(requests)
      .where(scope)
      .groupBy(requests.modality)
      .orderBy(asc(requests.modality)),
    db.selectDistinct({ provider: requests.provider }).from(requests).where(scope).orderBy(asc(requests.provider)),
  ]);
  return {
    ...sessionRow(row),
    by_modality: Object.fromEntries(
      byModality.map((m) => [m.modality, { cost: moneyNumber(m.cost), request_count: Number(m.requestCount) }]),
    ),
    providers: providerRows.map((p) => p.provider),
  };
}
