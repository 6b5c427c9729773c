import { sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { INGEST_BATCH_CAP } from "../../src/ingest/batch.js";
import { useTestApp } from "../support/app.js";
import { ACME, AUTH_YAML, countOf, GLOBEX, READER, record, rows } from "./helpers.js";

const T0 = Date.UTC(2026, 5, 1, 12, 0, 0);

function turn(session: string, index: number, extra: Record<string, unknown> = {}) {
  return {
    session_id: session,
    turn_index: index,
    caller_speak_start_ms: T0 + index * 10_000,
    caller_speak_end_ms: T0 + index * 10_000 + 2_000,
    agent_speak_start_ms: T0 + index * 10_000 + 2_700,
    agent_speak_end_ms: T0 + index * 10_000 + 6_000,
    response_speed_ms: 700,
    ...extra,
  };
}

function deadAir(session: string, startOffset: number, extra: Record<string, unknown> = {}) {
  return { session_id: session, started_at_ms: T0 + startOffset, duration_ms: 3200, threshold_used_ms: 2000, ...extra };
}

describe("POST /v1/ingest/turns and /v1/ingest/dead-air", () => {
  const t = useTestApp({ yaml: AUTH_YAML });
  const db = () => t.services.database.db;
  const post = async (path: string, body: unknown, key = ACME) => {
    const res = await t.call("POST", path, { key, body });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  };

  it("same auth as ingest: 401 without a key, 403 for a read key", async () => {
    for (const path of ["/v1/ingest/turns", "/v1/ingest/dead-air"]) {
      expect((await t.call("POST", path, { body: [] })).status).toBe(401);
      expect((await t.call("POST", path, { body: [], key: READER })).status).toBe(403);
      expect((await post(path, [])).body).toMatchObject({ accepted: 0 });
    }
  });

  it("stores turns with tenant from the key and answers {accepted}", async () => {
    const res = await post("/v1/ingest/turns", [turn("s-t1", 0, { tenant_id: "globex", extra: 1 }), turn("s-t1", 1)]);
    expect(res.status).toBe(200);
    expect(res.body.accepted).toBe(2);
    const got = await rows(db(), sql`SELECT tenant_id, turn_index, response_speed_ms FROM turns WHERE session_id = 's-t1' ORDER BY turn_index`);
    expect(got).toEqual([
      { tenant_id: "acme", turn_index: 0, response_speed_ms: 700 },
      { tenant_id: "acme", turn_index: 1, response_speed_ms: 700 },
    ]);
  });

  it("one malformed row does not reject the batch", async () => {
    const res = await post("/v1/ingest/turns", [
      turn("s-t2", 0),
      { session_id: "s-t2" },
      turn("s-t2", 2, { caller_speak_start_ms: "soon" }),
      turn("s-t2", 3, { response_speed_ms: null, agent_speak_start_ms: null, agent_speak_end_ms: undefined }),
    ]);
    expect(res.body).toMatchObject({ accepted: 2, skipped: 2 });
  });

  it("rejects seconds- and microseconds-scale timestamps and end-before-start", async () => {
    const res = await post("/v1/ingest/turns", [
      turn("s-t3", 0, { caller_speak_start_ms: T0 / 1000, caller_speak_end_ms: T0 / 1000 + 2 }),
      turn("s-t3", 1, { caller_speak_start_ms: T0 * 1000, caller_speak_end_ms: T0 * 1000 + 2 }),
      turn("s-t3", 2, { caller_speak_end_ms: T0 - 1 }),
      turn("s-t3", 3, { caller_speak_start_ms: -5 }),
      turn("s-t3", 4, { caller_speak_start_ms: T0 + 0.5 }),
    ]);
    expect(res.body).toMatchObject({ accepted: 0, skipped: 5 });
    const da = await post("/v1/ingest/dead-air", [
      deadAir("s-t3", 0, { started_at_ms: T0 / 1000 }),
      deadAir("s-t3", 0, { started_at_ms: T0 * 1000 }),
      deadAir("s-t3", 0, { duration_ms: -1 }),
    ]);
    expect(da.body).toMatchObject({ accepted: 0, skipped: 3 });
  });

  it("re-sent turns and dead-air rows are idempotent", async () => {
    const turns = [turn("s-t4", 0), turn("s-t4", 1)];
    expect((await post("/v1/ingest/turns", turns)).body.accepted).toBe(2);
    expect((await post("/v1/ingest/turns", turns)).body).toMatchObject({ accepted: 0, duplicates: 2 });
    expect((await post("/v1/ingest/turns", [turn("s-t4", 2), turn("s-t4", 2)])).body).toMatchObject({ accepted: 1, duplicates: 1 });
    const events = [deadAir("s-t4", 1000), deadAir("s-t4", 9000)];
    expect((await post("/v1/ingest/dead-air", events)).body.accepted).toBe(2);
    expect((await post("/v1/ingest/dead-air", events)).body).toMatchObject({ accepted: 0, duplicates: 2 });
    const [n] = await rows<{ n: number }>(db(), sql`SELECT count(*)::int AS n FROM turns WHERE session_id = 's-t4'`);
    expect(n?.n).toBe(3);
    const [m] = await rows<{ n: number }>(db(), sql`SELECT count(*)::int AS n FROM dead_air_events WHERE session_id = 's-t4'`);
    expect(m?.n).toBe(2);
  });

  it("assigns seq per room, increasing in arrival order across batches and sessions", async () => {
    await post("/v1/ingest/turns", [turn("s-a", 5, { room_name: "room-seq" }), turn("s-a", 1, { room_name: "room-seq" })]);
    await post("/v1/ingest/turns", [turn("s-b", 0, { room_name: "room-seq" }), turn("s-c", 0, { room_name: "room-other" })]);
    const got = await rows<{ session_id: string; turn_index: number; seq: string | number }>(
      db(),
      sql`SELECT session_id, turn_index, seq FROM turns WHERE room_name = 'room-seq' ORDER BY seq`,
    );
    expect(got.map((g) => [g.session_id, g.turn_index, Number(g.seq)])).toEqual([
      ["s-a", 5, 1],
      ["s-a", 1, 2],
      ["s-b", 0, 3],
    ]);
    const [other] = await rows<{ seq: string | number }>(db(), sql`SELECT seq FROM turns WHERE room_name = 'room-other'`);
    expect(Number(other?.seq)).toBe(1);
    // Another tenant's room of the same name has its own sequence.
    await post("/v1/ingest/turns", [turn("s-g", 0, { room_name: "room-seq" })], GLOBEX);
    const [g] = await rows<{ seq: string | number; tenant_id: string }>(db(), sql`SELECT seq, tenant_id FROM turns WHERE session_id = 's-g'`);
    expect(g).toMatchObject({ tenant_id: "globex" });
    expect(Number(g?.seq)).toBe(1);
  });

  it("concurrent batches into one room get distinct seqs, increasing in each batch's array order", async () => {
    const batches = Array.from({ length: 4 }, (_, b) => Array.from({ length: 50 }, (_, i) => turn(`s-conc-${b}`, i, { room_name: "room-conc" })));
    await Promise.all(batches.map((batch) => post("/v1/ingest/turns", batch)));
    const got = await rows<{ session_id: string; turn_index: number; seq: string | number }>(
      db(),
      sql`SELECT session_id, turn_index, seq FROM turns WHERE room_name = 'room-conc'`,
    );
    const seqs = got.map((g) => Number(g.seq)).sort((a, b) => a - b);
    expect(seqs).toEqual(Array.from({ length: 200 }, (_, i) => i + 1));
    for (let b = 0; b < 4; b++) {
      const mine = got.filter((g) => g.session_id === `s-conc-${b}`).sort((x, y) => x.turn_index - y.turn_index);
      const order = mine.map((g) => Number(g.seq));
      expect(order).toEqual([...order].sort((x, y) => x - y));
    }
  });

  it("learns a session's room from any row naming it: turns take their session's room, the session learns it", async () => {
    // A session known from ingest without a room; a turn without a room; then a dead-air row names it.
    await t.call("POST", "/v1/ingest", { key: ACME, body: [record({ session_id: "s-room" })] });
    await post("/v1/ingest/turns", [turn("s-room", 0)]);
    await post("/v1/ingest/dead-air", [deadAir("s-room", 500, { room_name: "room-learned" })]);
    const [s] = await rows(db(), sql`SELECT room_name FROM sessions WHERE id = 's-room'`);
    expect(s).toEqual({ room_name: "room-learned" });
    const [t0] = await rows(db(), sql`SELECT room_name FROM turns WHERE session_id = 's-room' AND turn_index = 0`);
    expect(t0).toEqual({ room_name: "room-learned" });
    // A later turn without room_name is stored with its session's room.
    await post("/v1/ingest/turns", [turn("s-room", 1)]);
    const [t1] = await rows(db(), sql`SELECT room_name FROM turns WHERE session_id = 's-room' AND turn_index = 1`);
    expect(t1).toEqual({ room_name: "room-learned" });
  });

  it("a session created after its turns named the room takes that room", async () => {
    await post("/v1/ingest/turns", [turn("s-late", 0, { room_name: "room-early" })]);
    await t.call("POST", "/v1/ingest", { key: ACME, body: [record({ session_id: "s-late" })] });
    const [s] = await rows(db(), sql`SELECT room_name FROM sessions WHERE id = 's-late'`);
    expect(s).toEqual({ room_name: "room-early" });
  });

  it("a tenant's rows never teach another tenant's session its room", async () => {
    await t.call("POST", "/v1/ingest", { key: GLOBEX, body: [record({ session_id: "s-theirs" })] });
    await post("/v1/ingest/turns", [turn("s-theirs", 0, { room_name: "hijack" })], ACME);
    const [s] = await rows(db(), sql`SELECT room_name, tenant_id FROM sessions WHERE id = 's-theirs'`);
    expect(s).toEqual({ room_name: null, tenant_id: "globex" });
  });

  it(`enforces the batch cap of ${INGEST_BATCH_CAP} on turns and dead-air`, async () => {
    const over = Array.from({ length: INGEST_BATCH_CAP + 1 }, (_, i) => turn("s-cap", i));
    const before = await countOf(db(), "turns");
    expect((await t.call("POST", "/v1/ingest/turns", { key: ACME, body: over })).status).toBe(413);
    expect(await countOf(db(), "turns")).toBe(before);
    const at = Array.from({ length: INGEST_BATCH_CAP }, (_, i) => turn("s-cap", i));
    expect((await post("/v1/ingest/turns", at)).body.accepted).toBe(INGEST_BATCH_CAP);
    const overDa = Array.from({ length: INGEST_BATCH_CAP + 1 }, (_, i) => deadAir("s-cap", i));
    expect((await t.call("POST", "/v1/ingest/dead-air", { key: ACME, body: overDa })).status).toBe(413);
    expect((await t.call("POST", "/v1/ingest/dead-air", { key: ACME, body: { session_id: "x" } })).status).toBe(422);
  });
});
