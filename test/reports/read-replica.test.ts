import { randomUUID } from "node:crypto";
import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Db, queryRows } from "../../src/db/client.js";
import { calls, turns } from "../../src/db/schema/index.js";
import type { RequestRow } from "../../src/db/schema/requests.js";
import { useTestApp } from "../support/app.js";
import { createTestDatabase, type TestDatabase } from "../support/db.js";
import { authYaml, KEYS } from "../support/fixtures.js";
import { seedRequests } from "../support/seed.js";

/**
 * DATABASE_READ_URL: the read routes query the read database (a replica), everything else the
 * primary. Here the "replica" is a second database with different rows (another provider, modality,
 * cost, latency, session, room and call), so every answer says which database it read.
 */
interface Side {
  row: RequestRow;
  session: string;
  room: string;
}

function side(name: string, modality: "stt" | "llm", provider: string, cost: string, ttfb: number): Side {
  const session = `sess-${name}`;
  const room = `room-${name}`;
  const row: RequestRow = {
    id: randomUUID(),
    ts: new Date(Date.now() - 60_000),
    modality,
    model_id: `${provider}/m-${modality}`,
    provider,
    status: "success",
    pricing: "priced",
    cost_usd: cost,
    ttfb_ms: ttfb,
    total_latency_ms: ttfb * 2,
    session_id: session,
    room_name: room,
  };
  return { row, session, room };
}

/** The side's request (its session comes from ingest's projection), a turn in its room and its call. */
async function seedSide(db: Db, s: Side) {
  await seedRequests(db, [s.row]);
  const start = Date.now() - 50_000;
  await db.insert(turns).values({
    sessionId: s.session,
    roomName: s.room,
    turnIndex: 0,
    seq: 1,
    callerSpeakStartMs: start,
    callerSpeakEndMs: start + 2000,
    agentSpeakStartMs: start + 2700,
    agentSpeakEndMs: start + 4000,
    responseSpeedMs: 700,
  });
  await db.insert(calls).values({ roomSid: `RM_${randomUUID()}`, roomName: s.room, origin: "agent" });
}

describe("read routes on the read database", () => {
  let replica: TestDatabase | null = null;
  const t = useTestApp(async () => {
    replica = await createTestDatabase();
    return { yaml: authYaml("ops"), readDatabase: replica.database };
  });
  const onReplica = side("replica", "stt", "deepgram", "0.01", 111);
  const onPrimary = side("primary", "llm", "openai", "0.05", 999);

  beforeAll(async () => {
    if (!replica) throw new Error("no replica database");
    await seedSide(replica.database.db, onReplica);
    await seedSide(t.services.database.db, onPrimary);
  });
  afterAll(async () => {
    await replica?.drop();
  });

  const get = async (path: string, status = 200) => {
    const res = await t.call("GET", path, { key: KEYS.ops });
    expect(res.status, path).toBe(status);
    return res.text();
  };
  const json = async (path: string) => JSON.parse(await get(path));

  it("/v1/costs and /v1/latency answer the replica's rows", async () => {
    const costs = await json("/v1/costs?period=today");
    expect(costs.requests).toBe(1);
    expect(Object.keys(costs.by_provider)).toEqual(["deepgram"]);
    const latency = await json("/v1/latency?period=today");
    expect(Object.keys(latency.models)).toEqual(["deepgram/m-stt"]);
  });

  it("/v1/logs and /v1/metrics answer the replica's rows", async () => {
    const logs = await get("/v1/logs");
    expect(logs).toContain(onReplica.row.id);
    expect(logs).not.toContain(onPrimary.row.id);
    const metrics = await get("/v1/metrics");
    expect(metrics).toContain('voxgate_requests_total{provider="deepgram"} 1');
    expect(metrics).not.toContain('voxgate_requests_total{provider="openai"} 1');
  });

  it("/v1/sessions, a session and room latency answer the replica's sessions and turns", async () => {
    const sessions = await json("/v1/sessions");
    expect(sessions.map((s: { id: string }) => s.id)).toEqual([onReplica.session]);
    expect((await json(`/v1/sessions/${onReplica.session}`)).id).toBe(onReplica.session);
    await get(`/v1/sessions/${onPrimary.session}`, 404);
    const room = await json(`/v1/rooms/${onReplica.room}/latency`);
    expect(room.turns.map((x: { response_speed_ms: number }) => x.response_speed_ms)).toEqual([700]);
    await get(`/v1/rooms/${onPrimary.room}/latency`, 404);
  });

  it("the dashboard's session reads answer the replica's", async () => {
    expect((await json("/api/sessions")).map((s: { id: string }) => s.id)).toEqual([onReplica.session]);
    expect((await json(`/api/sessions/${onReplica.session}`)).id).toBe(onReplica.session);
    const sessionTurns = await get(`/api/sessions/${onReplica.session}/turns`);
    expect(sessionTurns).toContain("700");
    await get(`/api/sessions/${onPrimary.session}/turns`, 404);
  });

  it("the dashboard's reports answer the replica's rows", async () => {
    expect(Object.keys((await json("/api/costs?period=today")).by_provider)).toEqual(["deepgram"]);
    expect(Object.keys((await json("/api/latency?period=today")).models)).toEqual(["deepgram/m-stt"]);
    const overview = await json("/api/overview");
    expect(overview.total_requests).toBe(1);
    expect(overview.total_cost_today).toBeCloseTo(0.01, 10);
    const costSeries = await json("/api/costs/series?period=today");
    expect(costSeries.points.reduce((n: number, p: { cost: number }) => n + p.cost, 0)).toBeCloseTo(0.01, 10);
    const latencySeries = await json("/api/latency/series?period=today");
    expect(latencySeries.points.filter((p: { requests: number }) => p.requests > 0).map((p: { p50_ttfb_ms: number }) => p.p50_ttfb_ms)).toEqual([111]);
    expect(Object.keys((await json("/api/latency/modalities?period=today")).modalities)).toEqual(["stt"]);
  });

  it("the dashboard's logs and calls answer the replica's rows", async () => {
    const logs = await get("/api/logs");
    expect(logs).toContain(onReplica.row.id);
    expect(logs).not.toContain(onPrimary.row.id);
    expect((await json(`/api/logs/${onReplica.row.id}`)).id).toBe(onReplica.row.id);
    await get(`/api/logs/${onPrimary.row.id}`, 404);
    expect((await json("/api/calls")).map((c: { room_name: string }) => c.room_name)).toEqual([onReplica.room]);
    expect((await json(`/api/calls/${onReplica.room}`)).room_name).toBe(onReplica.room);
    await get(`/api/calls/${onPrimary.room}`, 404);
  });

  it("the primary keeps its own rows (writes never go to the replica)", async () => {
    const [primary] = await queryRows<{ n: number }>(t.services.database.db, sql`SELECT count(*)::int AS n FROM requests`);
    expect(primary?.n).toBe(1);
  });
});
