import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { deriveCallOutcome } from "../../src/calls/derive.js";
import type { CallUpdate } from "../../src/calls/model.js";
import { CallWriter } from "../../src/calls/writer.js";
import { createTestApp, type TestApp } from "../support/app.js";
import { callRow, countOf } from "./support.js";

describe("deriveCallOutcome: the one rule for channel, end reason, trunk and probe", () => {
  const probe = new Set(["ST_probe"]);
  const leg = (kind: string | null, reason: string | null, leftAtMs: number | null, trunk?: string) => ({
    kind,
    disconnectReason: reason,
    leftAtMs,
    attributes: trunk ? { "sip.trunkID": trunk } : null,
  });

  it("no legs: nothing known", () => {
    expect(deriveCallOutcome([], probe)).toEqual({ channel: null, endReason: null, trunkId: null, isProbeTrunk: false });
  });

  it("no SIP leg: webrtc, no end reason even when a browser leg has one", () => {
    expect(deriveCallOutcome([leg("STANDARD", "CLIENT_INITIATED", 5), leg("AGENT", null, null)], probe)).toEqual({
      channel: "webrtc",
      endReason: null,
      trunkId: null,
      isProbeTrunk: false,
    });
  });

  it("SIP: the end reason of the SIP leg that left last, the trunk, probe when the trunk is listed", () => {
    const out = deriveCallOutcome([leg("SIP", "USER_REJECTED", 10, "ST_a"), leg("SIP", "SIP_TRUNK_FAILURE", 20, "ST_probe"), leg("AGENT", "ROOM_CLOSED", 30)], probe);
    expect(out).toEqual({ channel: "sip", endReason: "SIP_TRUNK_FAILURE", trunkId: "ST_a", isProbeTrunk: true });
    expect(deriveCallOutcome([leg("SIP", null, null, "ST_a")], probe)).toEqual({ channel: "sip", endReason: null, trunkId: "ST_a", isProbeTrunk: false });
  });
});

describe("CallWriter group commit", () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(async () => {
    await t.close();
  });

  const update = (room: string, attributes?: Record<string, string>): CallUpdate => ({
    call: { roomSid: room, tenantId: null, origin: "webhook", roomName: `name-${room}` },
    legs: attributes ? [{ participantSid: `PA_${room}`, kind: "SIP", attributes }] : [],
    event: { eventId: `EV_${room}`, event: "participant_joined", payload: { room } },
  });

  it("commits concurrent writes together and answers each one", async () => {
    const writer = new CallWriter(t.services.database.db, { loadtestTrunks: new Set() });
    const results = await Promise.all(Array.from({ length: 200 }, (_, i) => writer.write(update(`RM_gc_${i % 100}`, { "sip.trunkID": "ST" }))));
    // Each room twice, same event id: one recorded, one duplicate, whatever batch they landed in.
    expect(results.filter((r) => r === "recorded")).toHaveLength(100);
    expect(results.filter((r) => r === "duplicate")).toHaveLength(100);
    expect(await callRow(t, "RM_gc_7")).toMatchObject({ channel: "sip", trunk_id: "ST" });
  });

  it("one event the database refuses fails alone; its batch neighbours are written", async () => {
    const writer = new CallWriter(t.services.database.db, { loadtestTrunks: new Set() });
    const before = await countOf(t, "calls");
    // A NUL inside a jsonb key: only Postgres refuses it (validation never lets one through).
    const bad = update("RM_bad_key", { "bad\u0000key": "x" });
    const settled = await Promise.allSettled([
      ...Array.from({ length: 20 }, (_, i) => writer.write(update(`RM_nb_${i}`, { a: "b" }))),
      writer.write(bad),
      ...Array.from({ length: 20 }, (_, i) => writer.write(update(`RM_nb_${20 + i}`, { a: "b" }))),
    ]);
    expect(settled.filter((s) => s.status === "rejected")).toHaveLength(1);
    expect(await countOf(t, "calls")).toBe(before + 40);
    expect(await callRow(t, "RM_bad_key")).toBeUndefined();
  });
});
