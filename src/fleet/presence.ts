import { and, desc, gt, sql } from "drizzle-orm";
import { z } from "zod";
import { type TenantScope, tenantCondition } from "../auth/context.js";
import type { Db } from "../db/client.js";
import { agentPresence } from "../db/schema/index.js";
import { int32, int53, MAX_EPOCH_MS, MIN_EPOCH_MS, nonNegative, SECONDS_MS_BOUNDARY, shortText } from "../ingest/fields.js";

/** A worker leaves the roster this long after its last heartbeat (docs/api/fleet.md). */
export const ROSTER_AGEING_SECONDS = 45;
/** How often agents heartbeat by default (docs/api/fleet.md). */
export const HEARTBEAT_INTERVAL_SECONDS = 15;

export const WORKER_STATUSES = ["idle", "busy"] as const;

/** The agent's own clock: ISO-8601 string or epoch seconds/ms (told apart by magnitude). */
const agentClock = z.union([z.string().max(64), z.number().finite()]).transform((value, ctx) => {
  const ms = typeof value === "number" ? (Math.abs(value) < SECONDS_MS_BOUNDARY ? value * 1000 : value) : Date.parse(value);
  if (!Number.isFinite(ms) || ms < MIN_EPOCH_MS || ms > MAX_EPOCH_MS) {
    ctx.addIssue({ code: "custom", message: "must be an ISO-8601 timestamp or epoch seconds/ms between 2000 and 2100" });
    return z.NEVER;
  }
  return new Date(Math.round(ms));
});

/**
 * Worker presence snapshot (docs/api/fleet.md), as POST /v1/agents/heartbeat accepts it. Strings are
 * bounded, numbers finite and non-negative; unknown keys and `tenant_id` are ignored.
 */
export const heartbeatSchema = z.object({
  agent_id: shortText,
  agent_name: shortText.nullish(),
  dispatch_name: shortText.nullish(),
  status: z
    .preprocess((v) => (typeof v === "string" ? v.toLowerCase() : v), z.enum(WORKER_STATUSES))
    .nullish()
    .describe("idle or busy, case-insensitive, stored lower-case"),
  active_sessions: int32.nullish(),
  version: shortText.nullish(),
  project: shortText.nullish(),
  region: shortText.nullish(),
  host: shortText.nullish(),
  started_at: agentClock.nullish().describe("ISO-8601, or epoch seconds/ms (the agent's clock, stored as reported)"),
  memory_rss_bytes: int53.nullish(),
  memory_total_bytes: int53.nullish(),
  cpu_pct: nonNegative.max(100_000).nullish().describe("may exceed 100 on several cores"),
  ts: agentClock.nullish().describe("ISO-8601, or epoch seconds/ms (the agent's clock, stored as reported)"),
});

export type Heartbeat = z.infer<typeof heartbeatSchema>;

/** Upserts the caller's presence row; last_seen_at is the collector's (database) clock. */
export async function recordHeartbeat(db: Db, tenantId: string | null, hb: Heartbeat): Promise<void> {
  const values = {
    tenantId,
    agentId: hb.agent_id,
    agentName: hb.agent_name ?? null,
    dispatchName: hb.dispatch_name ?? null,
    status: hb.status ?? null,
    activeSessions: hb.active_sessions ?? null,
    version: hb.version ?? null,
    project: hb.project ?? null,
    region: hb.region ?? null,
    host: hb.host ?? null,
    startedAt: hb.started_at ?? null,
    memoryRssBytes: hb.memory_rss_bytes ?? null,
    memoryTotalBytes: hb.memory_total_bytes ?? null,
    cpuPct: hb.cpu_pct ?? null,
    ts: hb.ts ?? null,
    lastSeenAt: sql`now()`,
  };
  const { tenantId: _t, agentId: _a, ...update } = values;
  await db
    .insert(agentPresence)
    .values(values)
    .onConflictDoUpdate({ target: [agentPresence.tenantId, agentPresence.agentId], set: update });
}

export type PresenceRow = typeof agentPresence.$inferSelect;

/** Workers heard from in the last ROSTER_AGEING_SECONDS, confined to the caller's tenant. */
export async function listRoster(db: Db, scope: TenantScope): Promise<PresenceRow[]> {
  return db
    .select()
    .from(agentPresence)
    .where(
      and(
        gt(agentPresence.lastSeenAt, sql`now() - make_interval(secs => ${ROSTER_AGEING_SECONDS})`),
        tenantCondition(agentPresence.tenantId, scope),
      ),
    )
    .orderBy(desc(agentPresence.lastSeenAt));
}

const iso = (d: Date | null) => (d ? d.toISOString() : null);

/** A roster entry: presence only (never cost or latency). */
export function rosterEntry(row: PresenceRow, now: Date) {
  return {
    agent_id: row.agentId,
    agent_name: row.agentName,
    dispatch_name: row.dispatchName,
    status: row.status,
    active_sessions: row.activeSessions,
    version: row.version,
    project: row.project,
    tenant_id: row.tenantId,
    region: row.region,
    host: row.host,
    started_at: iso(row.startedAt),
    memory_rss_bytes: row.memoryRssBytes,
    memory_total_bytes: row.memoryTotalBytes,
    cpu_pct: row.cpuPct,
    ts: iso(row.ts),
    last_seen_at: row.lastSeenAt.toISOString(),
    seconds_since_heartbeat: Math.max(0, Math.round((now.getTime() - row.lastSeenAt.getTime()) / 100) / 10),
  };
}
