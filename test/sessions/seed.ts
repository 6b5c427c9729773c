import { randomUUID } from "node:crypto";
import type { Db } from "../../src/db/client.js";
import { calls, deadAirEvents, turns } from "../../src/db/schema/index.js";
import type { RequestRow } from "../../src/db/schema/requests.js";
import { authYaml, KEYS as K } from "../support/fixtures.js";

/** Keys used by every sessions test: an operator, a tenant-less reader, two tenants, an ingest-only key. */
export const KEYS = { ops: K.ops, reader: K.reader, acme: K.acmeReader, globex: K.globexReader, ingestOnly: K.ingest };

export const AUTH_YAML = authYaml("ops", "reader", "acmeReader", "globexReader", "ingest");

const T0 = Date.parse("2026-11-20T10:00:00Z");
export const at = (minutes: number) => new Date(T0 + minutes * 60_000);

interface RequestSeed {
  sessionId: string;
  tenantId: string | null;
  modality: "stt" | "llm" | "tts";
  provider: string;
  costUsd: string;
  ttfbMs?: number | null;
  status?: string;
  isProbe?: boolean;
  minute?: number;
}

/** A request row of a session, for ingest's write path (`seedRequests` in test/support/seed.ts). */
export function sessionRequest(r: RequestSeed & { roomName?: string }): RequestRow {
  return {
    id: randomUUID(),
    ts: at(r.minute ?? 1),
    tenant_id: r.tenantId,
    session_id: r.sessionId,
    room_name: r.roomName ?? null,
    modality: r.modality,
    model_id: `${r.provider}/m-${r.modality}`,
    provider: r.provider,
    cost_usd: r.costUsd,
    ttfb_ms: r.ttfbMs ?? null,
    total_latency_ms: r.ttfbMs === undefined || r.ttfbMs === null ? null : r.ttfbMs * 2,
    status: r.status ?? "success",
    is_probe: r.isProbe ?? false,
  };
}

interface TurnSeed {
  sessionId: string;
  tenantId: string | null;
  roomName?: string | null;
  turnIndex: number;
  seq: number;
  responseSpeedMs?: number | null;
}

export async function insertTurn(db: Db, t: TurnSeed) {
  const start = T0 + t.seq * 10_000;
  const speed = t.responseSpeedMs ?? null;
  await db.insert(turns).values({
    tenantId: t.tenantId,
    sessionId: t.sessionId,
    roomName: t.roomName ?? null,
    turnIndex: t.turnIndex,
    seq: t.seq,
    callerSpeakStartMs: start,
    callerSpeakEndMs: start + 2000,
    agentSpeakStartMs: speed === null ? null : start + 2000 + speed,
    agentSpeakEndMs: speed === null ? null : start + 4000 + speed,
    responseSpeedMs: speed,
  });
}

export async function insertDeadAir(db: Db, d: { sessionId: string; tenantId: string | null; roomName?: string; durationMs: number; startedAtMs: number }) {
  await db.insert(deadAirEvents).values({
    tenantId: d.tenantId,
    sessionId: d.sessionId,
    roomName: d.roomName ?? null,
    startedAtMs: d.startedAtMs,
    durationMs: d.durationMs,
    thresholdUsedMs: 1500,
  });
}

export async function insertProbeCall(db: Db, roomName: string) {
  await db.insert(calls).values({ roomSid: `RM_${randomUUID()}`, roomName, isProbe: true, origin: "webhook" });
}

export async function insertCall(db: Db, roomName: string, tenantId: string | null) {
  await db.insert(calls).values({ roomSid: `RM_${randomUUID()}`, roomName, tenantId, origin: "agent" });
}
