import { describe, expect, it } from "vitest";
import { deriveCallOutcome } from "../../src/calls/derive.js";
import type { CallUpdate } from "../../src/calls/model.js";
import { applyCallUpdates } from "../../src/calls/upsert.js";
import { CallWriter } from "../../src/calls/writer.js";
import { useTestApp } from "../support/app.js";
import { callRow, countOf, rows } from "./support.js";
import { sql } from "drizzle-orm";

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
  const t = useTestApp();

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
  /** A call's history as updates: out of order, with replays, a second tenant's attempt and an event-less report. */
  const history = (p: string, i: number): CallUpdate[] => {
    const room = `RM_${p}_${i}`;
    const call = { roomSid: room, tenantId: null, origin: "webhook" as const, roomName: `name-${i}` };
    const sip = `PA_${p}_${i}_sip`;
    const ev = (id: string, event: string) => ({ eventId: `EV_${p}_${i}_${id}`, event, payload: { room: `name-${i}`, id } });
    const trunk = i % 3 === 0 ? "ST_probe" : "ST_prod";
    const left: CallUpdate = {
      call,
      legs: [{ participantSid: sip, kind: "SIP", state: "DISCONNECTED", leftAtMs: 9000 + i, disconnectReason: "USER_REJECTED", attributes: { "sip.trunkID": trunk, x: "left" } }],
      event: ev("left", "participant_left"),
    };
    const joined: CallUpdate = {
      call,
      legs: [{ participantSid: sip, kind: "SIP", state: "ACTIVE", joinedAtMs: 2000 + i, identity: "caller", attributes: { "sip.trunkID": trunk, x: "joined" } }],
      event: ev("joined", "participant_joined"),
    };
    const agent: CallUpdate = { call, legs: [{ participantSid: `PA_${p}_${i}_agent`, kind: "AGENT", joinedAtMs: 2500 + i }], event: ev("agent", "participant_joined") };
    const track: CallUpdate = {
      call,
      legs: [{ participantSid: sip, firstAudioTrackAtMs: 3000 + i, audioTrackSid: `TR_${i}`, audioCodec: "opus" }],
      event: ev("track", "track_published"),
    };
    const finished: CallUpdate = { call: { ...call, endedAtMs: 10000 + i }, legs: [], event: ev("finished", "room_finished") };
    const started: CallUpdate = { call: { ...call, startedAtMs: 1000 + i }, legs: [], event: ev("started", "room_started") };
    const foreign: CallUpdate = { call: { ...call, tenantId: "other", project: "p" }, legs: [], event: ev("foreign", "room_started") };
    const report: CallUpdate = { call: { ...call, tenantId: "t1", agentId: "agent-1", origin: "agent" }, legs: [] };
    const forged: CallUpdate = { ...left, legs: left.legs.map((l) => ({ ...l, identity: "forged" })) };
    return [finished, left, forged, track, joined, started, agent, report, foreign, joined];
  };

  it("a batch written with one statement per run of distinct rooms gives the rows and answers of one-by-one writes", async () => {
    const db = t.services.database.db;
    const opts = { loadtestTrunks: new Set(["ST_probe"]) };
    const n = 12;
    const one: string[] = [];
    for (let i = 0; i < n; i++) for (const u of history("one", i)) one.push(...(await applyCallUpdates(db, [u], opts)));
    // Interleave every call's history (as a busy LiveKit does) and write it as one group.
    const lists = Array.from({ length: n }, (_, i) => history("grp", i));
    const per = lists[0]?.length ?? 0;
    const steps = Array.from({ length: per }, (_, k) => k);
    const burst = steps.flatMap((k) => lists.map((l) => l[k] as CallUpdate));
    const grouped = await applyCallUpdates(db, burst, opts);
    const expected = steps.flatMap((k) => lists.map((_, i) => one[i * per + k]));
    expect(grouped).toEqual(expected);
    expect(grouped.filter((r) => r === "duplicate").length).toBe(2 * n);
    expect(grouped.filter((r) => r === "foreign").length).toBe(n);

    const snap = async (p: string) => ({
      calls: await rows(t, sql`select room_sid, room_name, tenant_id, origin, project, agent_id, started_at_ms, ended_at_ms, channel, end_reason, trunk_id, is_probe
                               from calls where room_sid like ${`RM_${p}_%`} order by room_sid`),
      legs: await rows(t, sql`select participant_sid, room_sid, identity, kind, state, joined_at_ms, left_at_ms, disconnect_reason,
                                     first_audio_track_at_ms, audio_track_sid, audio_codec, attributes
                              from call_legs where room_sid like ${`RM_${p}_%`} order by participant_sid`),
      events: await rows(t, sql`select event_id, room_sid, event, payload from call_events where room_sid like ${`RM_${p}_%`} order by event_id`),
    });
    const ones = await snap("one");
    expect(ones.calls).toHaveLength(n);
    expect(ones.calls.filter((c) => c.is_probe)).toHaveLength(n / 3);
    expect(JSON.parse(JSON.stringify(await snap("grp")).replaceAll("_grp_", "_one_"))).toEqual(ones);
  });
});
