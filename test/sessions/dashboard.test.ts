import { beforeAll, describe, expect, it } from "vitest";
import { useTestApp } from "../support/app.js";
import { seedRequests } from "../support/seed.js";
import { AUTH_YAML, at, insertDeadAir, insertTurn, KEYS, sessionRequest } from "./seed.js";

describe("dashboard session reads under /api/sessions", () => {
  const get = (path: string, key: string = KEYS.acme) => t.call("GET", path, { key });

  const t = useTestApp({ yaml: AUTH_YAML });
  beforeAll(async () => {
    const db = t.services.database.db;
    // The sessions are what ingest's write path derives from their requests (s1: two, in room-a).
    await seedRequests(db, [
      sessionRequest({ sessionId: "s1", tenantId: "acme", roomName: "room-a", modality: "stt", provider: "deepgram", costUsd: "0.01", ttfbMs: 100, minute: 1 }),
      sessionRequest({ sessionId: "s1", tenantId: "acme", roomName: "room-a", modality: "llm", provider: "openai", costUsd: "0.02", ttfbMs: 300, minute: 2 }),
      sessionRequest({ sessionId: "s2", tenantId: "acme", modality: "llm", provider: "openai", costUsd: "0", minute: 2 }),
      sessionRequest({ sessionId: "g1", tenantId: "globex", modality: "llm", provider: "openai", costUsd: "0", minute: 3 }),
    ]);
    await insertTurn(db, { sessionId: "s1", tenantId: "acme", turnIndex: 1, seq: 2, responseSpeedMs: null });
    await insertTurn(db, { sessionId: "s1", tenantId: "acme", turnIndex: 0, seq: 1, responseSpeedMs: 700 });
    await insertDeadAir(db, { sessionId: "s1", tenantId: "acme", durationMs: 3000, startedAtMs: at(1).getTime() + 5000 });
    await insertTurn(db, { sessionId: "g1", tenantId: "globex", turnIndex: 0, seq: 1, responseSpeedMs: 500 });
  });

  it("lists and reads the same rows as /v1/sessions", async () => {
    const v1 = await (await get("/v1/sessions")).json();
    const api = await (await get("/api/sessions")).json();
    expect(api).toEqual(v1);
    expect(await (await get("/api/sessions/s1")).json()).toEqual(await (await get("/v1/sessions/s1")).json());
    const page = await get("/api/sessions?limit=1");
    expect(page.headers.get("x-next-cursor")).not.toBeNull();
  });

  it("turns drill-down: every turn of the session by turn_index", async () => {
    const res = await get("/api/sessions/s1/turns");
    expect(res.status).toBe(200);
    const rows = (await res.json()) as { turn_index: number; seq: number; response_speed_ms: number | null }[];
    expect(rows.map((r) => r.turn_index)).toEqual([0, 1]);
    expect(rows[0]).toMatchObject({ seq: 1, response_speed_ms: 700 });
    expect(rows[1]?.response_speed_ms).toBeNull();
  });

  it("dead-air drill-down", async () => {
    const rows = (await (await get("/api/sessions/s1/dead-air")).json()) as { duration_ms: number; threshold_used_ms: number }[];
    expect(rows).toEqual([{ started_at_ms: at(1).getTime() + 5000, duration_ms: 3000, threshold_used_ms: 1500, room_name: null }]);
  });

  it("transcript drill-down: who spoke when, no stored text", async () => {
    const body = (await (await get("/api/sessions/s1/transcript")).json()) as {
      text_stored: boolean;
      entries: { speaker: string; turn_index: number; text: null }[];
    };
    expect(body.text_stored).toBe(false);
    expect(body.entries.map((e) => `${e.turn_index}:${e.speaker}`)).toEqual(["0:caller", "0:agent", "1:caller"]);
    expect(body.entries.every((e) => e.text === null)).toBe(true);
  });

  it("replay drill-down: requests, speech and dead air on one time line", async () => {
    const body = (await (await get("/api/sessions/s1/replay")).json()) as {
      session: { id: string };
      events: { at_ms: number; kind: string }[];
      truncated: boolean;
    };
    expect(body.session.id).toBe("s1");
    expect(body.truncated).toBe(false);
    const kinds = body.events.map((e) => e.kind).sort();
    expect(kinds).toEqual(["agent_speech", "caller_speech", "caller_speech", "dead_air", "request", "request"]);
    const times = body.events.map((e) => e.at_ms);
    expect(times).toEqual([...times].sort((a, b) => a - b));
  });

  it("every drill-down answers another tenant's session like a missing one", async () => {
    for (const kind of ["", "/turns", "/dead-air", "/transcript", "/replay"]) {
      const foreign = await get(`/api/sessions/g1${kind}`);
      const missing = await get(`/api/sessions/nope${kind}`);
      expect(foreign.status, kind).toBe(404);
      expect(await foreign.text()).toBe(await missing.text());
    }
    expect((await get("/api/sessions/g1/turns", KEYS.globex)).status).toBe(200);
    expect((await t.call("GET", "/api/sessions/s1/turns")).status).toBe(401);
  });
});
