import { and, asc, eq, gt, gte, isNotNull, ne, type SQL, sql } from "drizzle-orm";
import { OPERATOR } from "../auth/context.js";
import { MODALITIES, type Modality } from "../config/schema.js";
import type { Db } from "../db/client.js";
import { calls, requests, sessions, turns } from "../db/schema/index.js";
import { addSample, emptySketch, type LatencySketch, type LatencySummary, summarize } from "../stats/summary.js";
import { roomLatency } from "./room-latency.js";

/** Rows read per page while streaming samples into sketches (memory stays flat on a big store). */
const PAGE_ROWS = 20_000;

export interface LatencyReport {
  room: string | null;
  since: string | null;
  /** Response speed (caller stops speaking → agent starts), from turns.response_speed_ms. */
  e2e_ms: LatencySummary | null;
  ttfb_ms: Record<Modality, LatencySummary | null>;
  /** Room reports only: dead air of the call. */
  dead_air_ms?: LatencySummary | null;
  turn_count?: number;
}

/**
 * The `voxgate latency` report, operator scope, probe traffic left out. With a room it is exactly
 * the aggregates of GET /v1/rooms/{room}/latency; otherwise every turn and request in the store
 * (since a time), streamed page by page into the shared sketch and summarised by `summarize`.
 */
export async function latencyReport(db: Db, opts: { room?: string; since?: Date }): Promise<LatencyReport | null> {
  if (opts.room !== undefined) {
    const r = await roomLatency(db, { tenantId: OPERATOR.tenantId, room: opts.room });
    if (!r) return null;
    return {
      room: opts.room,
      since: null,
      e2e_ms: r.e2e_ms,
      ttfb_ms: { stt: r.components.stt_ttfb_ms, llm: r.components.llm_ttfb_ms, tts: r.components.tts_ttfb_ms },
      dead_air_ms: r.components.dead_air_ms,
      turn_count: r.turn_count,
    };
  }
  const since = opts.since;
  // A probe call hides the turns of its own tenant's room, or of every tenant for an untenanted call
  // (the operator's webhook and load-test trunks); never another tenant's (room names are the caller's to choose).
  const probeCall = (room: SQL, tenant: SQL) =>
    sql`exists (select 1 from ${calls} c where c.is_probe and c.room_name = ${room} and (c.tenant_id is null or c.tenant_id = ${tenant}))`;
  const e2e = emptySketch();
  const turnWhere: (SQL | undefined)[] = [
    isNotNull(turns.responseSpeedMs),
    since ? gte(turns.callerSpeakStartMs, since.getTime()) : undefined,
    sql`not ${probeCall(sql`${turns.roomName}`, sql`${turns.tenantId}`)}`,
    sql`not exists (select 1 from ${sessions} s where s.id = ${turns.sessionId} and s.tenant_id is not distinct from ${turns.tenantId}
          and ${probeCall(sql`s.room_name`, sql`s.tenant_id`)})`,
  ];
  let lastTurn = 0;
  for (;;) {
    const page = await db
      .select({ id: turns.id, v: turns.responseSpeedMs })
      .from(turns)
      .where(and(...turnWhere, gt(turns.id, lastTurn)))
      .orderBy(asc(turns.id))
      .limit(PAGE_ROWS);
    for (const t of page) if (t.v !== null) addSample(e2e, t.v);
    const last = page.at(-1);
    if (!last || page.length < PAGE_ROWS) break;
    lastTurn = last.id;
  }

  const ttfb = Object.fromEntries(MODALITIES.map((m) => [m, emptySketch()])) as Record<Modality, LatencySketch>;
  const reqWhere: (SQL | undefined)[] = [
    isNotNull(requests.ttfbMs),
    ne(requests.status, "error"),
    eq(requests.isProbe, false),
    since ? gte(requests.ts, since) : undefined,
  ];
  let lastId: string | null = null;
  for (;;) {
    const page = await db
      .select({ id: requests.id, modality: requests.modality, v: requests.ttfbMs })
      .from(requests)
      .where(and(...reqWhere, lastId === null ? undefined : gt(requests.id, lastId)))
      .orderBy(asc(requests.id))
      .limit(PAGE_ROWS);
    for (const r of page) {
      const sketch = ttfb[r.modality as Modality];
      if (sketch && r.v !== null) addSample(sketch, r.v);
    }
    const last = page.at(-1);
    if (!last || page.length < PAGE_ROWS) break;
    lastId = last.id;
  }

  return {
    room: null,
    since: since ? since.toISOString() : null,
    e2e_ms: summarize(e2e),
    ttfb_ms: { stt: summarize(ttfb.stt), llm: summarize(ttfb.llm), tts: summarize(ttfb.tts) },
  };
}

/** The report as a fixed-width table (ms). "-" where there is no sample. */
export function formatLatencyReport(r: LatencyReport): string {
  const scope = r.room === null ? "all rooms" : `room ${r.room}`;
  const lines = [`Voxgate latency report: ${scope}${r.since ? `, since ${r.since}` : ""} (ms, probe traffic excluded)`];
  const cols = ["count", "p50", "p90", "p95", "p99", "avg", "min", "max"] as const;
  lines.push(["", ...cols].map((c, i) => (i === 0 ? "".padEnd(22) : c.padStart(10))).join(""));
  const row = (label: string, s: LatencySummary | null | undefined) =>
    label.padEnd(22) + cols.map((c) => (s ? String(s[c]) : "-").padStart(10)).join("");
  lines.push(row("response speed (e2e)", r.e2e_ms));
  for (const m of MODALITIES) lines.push(row(`${m} ttfb`, r.ttfb_ms[m]));
  if (r.dead_air_ms !== undefined) lines.push(row("dead air", r.dead_air_ms));
  if (r.turn_count !== undefined) lines.push(`turns: ${r.turn_count}`);
  return `${lines.join("\n")}\n`;
}
