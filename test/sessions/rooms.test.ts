import { sql } from "drizzle-orm";
import { beforeAll, describe, expect, it } from "vitest";
import { turns } from "../../src/db/schema/index.js";
import { summarizeSamples } from "../../src/stats/summary.js";
import { useTestApp } from "../support/app.js";
import { seedRequests } from "../support/seed.js";
import { AUTH_YAML, insertCall, insertDeadAir, insertProbeCall, insertTurn, KEYS, sessionRequest } from "./seed.js";

interface RoomRecord {
  room: string;
  turns: { seq: number; turn_index: number; session_id: string; caller_speak_end_ms: number; agent_speak_start_ms: number | null; response_speed_ms: number | null }[];
  turn_count: number;
  next_since_turn: number | null;
  components: Record<string, { count: number; p95: number } | null>;
  e2e_ms: { count: number; p50: number; p95: number; avg: number } | null;
  is_probe: boolean;
}

describe("GET /v1/rooms/{room}/latency", () => {
  const get = (path: string, key: string = KEYS.acme) => t.call("GET", path, { key });
  const record = async (path: string, key?: string) => {
    const res = await get(path, key);
    expect(res.status).toBe(200);
    return (await res.json()) as RoomRecord;
  };

  const t = useTestApp({ yaml: AUTH_YAML });
  beforeAll(async () => {
    const db = t.services.database.db;
    // room-a: session s1's requests name the room (its turns do not); session s2's turns name it directly.
    await insertTurn(db, { sessionId: "s1", tenantId: "acme", turnIndex: 0, seq: 1, responseSpeedMs: 800 });
    await insertTurn(db, { sessionId: "s1", tenantId: "acme", turnIndex: 1, seq: 2, responseSpeedMs: null });
    await insertTurn(db, { sessionId: "s2", tenantId: "acme", roomName: "room-a", turnIndex: 0, seq: 3, responseSpeedMs: 1200 });
    await insertTurn(db, { sessionId: "s2", tenantId: "acme", roomName: "room-a", turnIndex: 1, seq: 4, responseSpeedMs: 950 });
    await seedRequests(db, [
      sessionRequest({ sessionId: "s1", tenantId: "acme", roomName: "room-a", modality: "stt", provider: "deepgram", costUsd: "0.01", ttfbMs: 120 }),
      sessionRequest({ sessionId: "s1", tenantId: "acme", roomName: "room-a", modality: "llm", provider: "openai", costUsd: "0.01", ttfbMs: 400 }),
      sessionRequest({ sessionId: "s2", tenantId: "acme", modality: "llm", provider: "openai", costUsd: "0.01", ttfbMs: 600, minute: 2 }),
      sessionRequest({ sessionId: "s2", tenantId: "acme", modality: "tts", provider: "cartesia", costUsd: "0.01", ttfbMs: 90, minute: 2 }),
      // Left out of the aggregates: a probe request, an errored request, a request without ttfb.
      sessionRequest({ sessionId: "s1", tenantId: "acme", roomName: "room-a", modality: "stt", provider: "deepgram", costUsd: "0", ttfbMs: 99_999, isProbe: true }),
      sessionRequest({ sessionId: "s1", tenantId: "acme", roomName: "room-a", modality: "llm", provider: "openai", costUsd: "0", ttfbMs: 88_888, status: "error" }),
      sessionRequest({ sessionId: "s1", tenantId: "acme", roomName: "room-a", modality: "tts", provider: "cartesia", costUsd: "0", ttfbMs: null }),
    ]);
    await insertDeadAir(db, { sessionId: "s1", tenantId: "acme", durationMs: 2500, startedAtMs: 1 });
    await insertDeadAir(db, { sessionId: "s2", tenantId: "acme", roomName: "room-a", durationMs: 4000, startedAtMs: 2 });

    // room-quiet: turns but no measured response speed.
    await insertTurn(db, { sessionId: "q1", tenantId: "acme", turnIndex: 0, seq: 1 });
    await insertTurn(db, { sessionId: "q1", tenantId: "acme", turnIndex: 1, seq: 2 });

    // room-g belongs to globex; room-probe is a load-test call.
    await insertTurn(db, { sessionId: "g1", tenantId: "globex", roomName: "room-g", turnIndex: 0, seq: 1, responseSpeedMs: 700 });
    await insertTurn(db, { sessionId: "p1", tenantId: "acme", roomName: "room-probe", turnIndex: 0, seq: 1, responseSpeedMs: 5000 });
    await insertProbeCall(db, "room-probe");
    // Each of these sessions ran one request without a measured TTFB (sessions are what requests make).
    await seedRequests(db, [
      sessionRequest({ sessionId: "q1", tenantId: "acme", roomName: "room-quiet", modality: "llm", provider: "openai", costUsd: "0", ttfbMs: null, minute: 3 }),
      sessionRequest({ sessionId: "g1", tenantId: "globex", roomName: "room-g", modality: "llm", provider: "openai", costUsd: "0", ttfbMs: null, minute: 4 }),
      sessionRequest({ sessionId: "p1", tenantId: "acme", roomName: "room-probe", modality: "llm", provider: "openai", costUsd: "0", ttfbMs: null, minute: 5 }),
    ]);
    // A call that ran no inference yet: known to its tenant, unknown to others.
    await insertCall(db, "room-call-only", "acme");
  });

  it("200 with samples: turns by seq, whole-call e2e and components from the one summary routine", async () => {
    const r = await record("/v1/rooms/room-a/latency");
    expect(r.room).toBe("room-a");
    expect(r.turns.map((x) => x.seq)).toEqual([1, 2, 3, 4]);
    expect(r.turns[0]).toMatchObject({ seq: 1, turn_index: 0, session_id: "s1", response_speed_ms: 800 });
    expect(r.turns[1]?.response_speed_ms).toBeNull();
    expect(r.turn_count).toBe(4);
    expect(r.e2e_ms).toEqual(summarizeSamples([800, 1200, 950]));
    expect(r.components.stt_ttfb_ms).toEqual(summarizeSamples([120]));
    expect(r.components.llm_ttfb_ms).toEqual(summarizeSamples([400, 600]));
    expect(r.components.tts_ttfb_ms).toEqual(summarizeSamples([90]));
    expect(r.components.dead_air_ms).toEqual(summarizeSamples([2500, 4000]));
    expect(r.is_probe).toBe(false);
    expect(r.next_since_turn).toBeNull();
  });

  it("since_turn narrows only turns (compared against seq), never the aggregates", async () => {
    const all = await record("/v1/rooms/room-a/latency");
    const later = await record("/v1/rooms/room-a/latency?since_turn=2");
    expect(later.turns.map((x) => x.seq)).toEqual([3, 4]);
    expect(later.turn_count).toBe(all.turn_count);
    expect(later.e2e_ms).toEqual(all.e2e_ms);
    expect(later.components).toEqual(all.components);
    expect((await record("/v1/rooms/room-a/latency?since_turn=4")).turns).toEqual([]);
    expect((await record("/v1/rooms/room-a/latency?since_turn=0")).turns.length).toBe(4);
  });

  it("200 with turns but e2e_ms null (not zeros) when no turn has a measured response speed", async () => {
    const r = await record("/v1/rooms/room-quiet/latency");
    expect(r.turn_count).toBe(2);
    expect(r.turns.length).toBe(2);
    expect(r.e2e_ms).toBeNull();
    expect(r.components).toEqual({ stt_ttfb_ms: null, llm_ttfb_ms: null, tts_ttfb_ms: null, dead_air_ms: null });
  });

  it("200 with no turns and null aggregates for a recorded call that has no turns yet", async () => {
    const r = await record("/v1/rooms/room-call-only/latency");
    expect(r).toMatchObject({ turns: [], turn_count: 0, e2e_ms: null, next_since_turn: null });
    const foreign = await get("/v1/rooms/room-call-only/latency", KEYS.globex);
    expect(foreign.status).toBe(404);
    expect(await foreign.text()).toBe(await (await get("/v1/rooms/nothing-here/latency", KEYS.globex)).text());
  });

  it("404 for an unknown room and the identical 404 for another tenant's room", async () => {
    const unknown = await get("/v1/rooms/no-such-room/latency");
    const foreign = await get("/v1/rooms/room-g/latency");
    expect(unknown.status).toBe(404);
    expect(foreign.status).toBe(404);
    expect(await foreign.text()).toBe(await unknown.text());
    // The owner and the operator see it.
    expect((await record("/v1/rooms/room-g/latency", KEYS.globex)).turn_count).toBe(1);
    expect((await record("/v1/rooms/room-g/latency", KEYS.ops)).turn_count).toBe(1);
  });

  it("422 for a bad since_turn, whatever the room", async () => {
    for (const bad of ["-1", "abc", "1.5", "", "1e3", "99999999999999999"]) {
      const res = await get(`/v1/rooms/room-a/latency?since_turn=${bad}`);
      expect(res.status, `since_turn=${bad}`).toBe(422);
      const body = (await res.json()) as { error: { details: { path: string }[] } };
      expect(body.error.details[0]?.path).toBe("since_turn");
    }
  });

  it("leaves a probe call's samples out of the aggregates unless include_probe=true", async () => {
    const r = await record("/v1/rooms/room-probe/latency");
    expect(r.is_probe).toBe(true);
    expect(r.turn_count).toBe(1);
    expect(r.turns.length).toBe(1);
    expect(r.e2e_ms).toBeNull();
    const withProbe = await record("/v1/rooms/room-probe/latency?include_probe=true");
    expect(withProbe.e2e_ms).toEqual(summarizeSamples([5000]));
  });

  it("answers SQL metacharacters, encoded slashes and NUL in {room} with 404 and changes nothing", async () => {
    const count = async () => (await t.services.database.db.select({ n: sql<number>`count(*)::int` }).from(turns))[0]?.n;
    const before = await count();
    for (const room of ["room-a'%20OR%20'1'%3D'1", "room-a%3B%20DELETE%20FROM%20turns", "room-a%2F..%2Froom-g", "%00", "room-a%00", "y".repeat(600)]) {
      const res = await get(`/v1/rooms/${room}/latency`);
      expect(res.status, room.slice(0, 40)).toBe(404);
    }
    expect(await count()).toBe(before);
  });

  it("needs a read key", async () => {
    expect((await t.call("GET", "/v1/rooms/room-a/latency")).status).toBe(401);
    expect((await get("/v1/rooms/room-a/latency", KEYS.ingestOnly)).status).toBe(403);
  });
});
