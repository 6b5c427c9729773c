import { sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { createTestApp, useTestApp } from "../support/app.js";
import { LIVEKIT_ENV } from "../support/fixtures.js";
import { seedRequests } from "../support/seed.js";
import { callRow, countOf, exampleEvents, LK_KEY, LK_SECRET, legRow, postWebhook, rows, signBody } from "./support.js";

const PROBE_TRUNK = "ST_probeTrunk01";

describe("POST /v1/livekit/webhook", () => {
  const t = useTestApp({
    env: { ...LIVEKIT_ENV, VOXGATE_LOADTEST_TRUNK_IDS: `ST_other, ${PROBE_TRUNK}` },
  });

  it("records the reference call in order: call row, legs, channel, end reason, audio track", async () => {
    const ev = exampleEvents("RM_inorder", "call-inorder", "ST_prod");
    for (const e of [ev.roomStarted, ev.sipJoined, ev.trackPublished, ev.webAborted, ev.sipLeft, ev.egressEnded, ev.roomFinished]) {
      const res = await postWebhook(t, e);
      expect(res.status).toBe(200);
      expect(((await res.json()) as { status: string }).status).toBe("ok");
    }
    const call = await callRow(t, "RM_inorder");
    expect(call).toMatchObject({
      room_name: "call-inorder",
      tenant_id: null,
      origin: "webhook",
      channel: "sip",
      end_reason: "USER_REJECTED",
      trunk_id: "ST_prod",
      is_probe: false,
    });
    expect(Number(call?.started_at_ms)).toBe(1767225600000);
    expect(Number(call?.ended_at_ms)).toBe(1767225720000);
    const sip = await legRow(t, ev.sip);
    expect(sip).toMatchObject({ room_sid: "RM_inorder", kind: "SIP", state: "DISCONNECTED", disconnect_reason: "USER_REJECTED" });
    expect(Number(sip?.joined_at_ms)).toBe(1767225602123);
    expect(Number(sip?.left_at_ms)).toBe(1767225695000);
    expect(Number(sip?.first_audio_track_at_ms)).toBe(1767225603000);
    expect(sip?.audio_track_sid).toBe("TR_RM_inorder");
    expect(sip?.audio_codec).toBe("opus");
    expect(sip?.attributes).toMatchObject({ "sip.callID": "SCL_dHjQbWZT9Cnu", "sip.callStatus": "hangup" });
    const web = await legRow(t, ev.web);
    // No `kind` in protobuf-JSON means STANDARD; joinedAt seconds become ms.
    expect(web).toMatchObject({ kind: "STANDARD", disconnect_reason: "JOIN_FAILURE" });
    expect(Number(web?.joined_at_ms)).toBe(1767225605000);
    // egress is accepted but not recorded
    const events = await rows<{ event: string }>(t, sql`select event from call_events where room_sid = 'RM_inorder'`);
    expect(events.map((e) => e.event).sort()).toEqual(
      ["participant_connection_aborted", "participant_joined", "participant_left", "room_finished", "room_started", "track_published"].sort(),
    );
  });
});

describe("webhook delivery order, replays and probe traffic", () => {
  const t = useTestApp({
    env: { ...LIVEKIT_ENV, VOXGATE_LOADTEST_TRUNK_IDS: `ST_other, ${PROBE_TRUNK}` },
  });

  const snapshot = async (room: string) => {
    const strip = (r: Record<string, unknown> | undefined) => {
      if (!r) return r;
      const { updated_at: _u, created_at: _c, ...rest } = r;
      return rest;
    };
    const legs = await rows<Record<string, unknown>>(t, sql`select * from call_legs where room_sid = ${room} order by participant_sid`);
    return { call: strip(await callRow(t, room)), legs: legs.map(strip) };
  };

  it("any delivery order converges on the same rows as in-order delivery", async () => {
    const a = exampleEvents("RM_order_a", "call-order", "ST_prod");
    for (const e of [a.roomStarted, a.sipJoined, a.trackPublished, a.webAborted, a.sipLeft, a.roomFinished]) {
      expect((await postWebhook(t, e)).status).toBe(200);
    }
    const b = exampleEvents("RM_order_b", "call-order", "ST_prod");
    // Reversed: room_finished and participant_left first (they create the call row), room_started last.
    for (const e of [b.roomFinished, b.sipLeft, b.webAborted, b.trackPublished, b.sipJoined, b.roomStarted]) {
      expect((await postWebhook(t, e)).status).toBe(200);
    }
    const sa = await snapshot("RM_order_a");
    const sb = await snapshot("RM_order_b");
    const rename = (s: unknown) => JSON.parse(JSON.stringify(s).replaceAll("RM_order_a", "RM_order_b"));
    expect(sb).toEqual(rename(sa));
    // A late room_started did not erase ended_at; a late participant_joined did not revive the leg.
    expect(Number(sb.call?.ended_at_ms)).toBe(1767225720000);
    expect(sb.legs.find((l) => l?.participant_sid === b.sip)?.state).toBe("DISCONNECTED");
  });

  it("concurrent, shuffled delivery over a real socket (group-committed) converges on the in-order rows", async () => {
    const base = await t.listen();
    const calls = Array.from({ length: 20 }, (_, i) => exampleEvents(`RM_conc_${i}`, "call-order", "ST_prod"));
    const all = calls.flatMap((ev) => [ev.roomStarted, ev.sipJoined, ev.trackPublished, ev.webAborted, ev.sipLeft, ev.roomFinished, ev.sipJoined]);
    // Deterministic shuffle (every event of every call, one replay each), all in flight at once.
    const shuffled = all.map((e, i) => ({ e, k: (i * 7919) % all.length })).sort((a, b) => a.k - b.k).map((x) => x.e);
    const statuses = await Promise.all(
      shuffled.map(async (e) => {
        const raw = JSON.stringify(e);
        const res = await fetch(`${base}/v1/livekit/webhook`, { method: "POST", headers: { authorization: await signBody(raw), "content-type": "application/webhook+json" }, body: raw });
        return res.status;
      }),
    );
    expect(statuses.every((s) => s === 200)).toBe(true);
    const reference = await snapshot("RM_order_a");
    for (let i = 0; i < 20; i++) {
      const rename = (s: unknown) => JSON.parse(JSON.stringify(s).replaceAll("RM_order_a", `RM_conc_${i}`));
      expect(await snapshot(`RM_conc_${i}`)).toEqual(rename(reference));
    }
  });

  it("participant_left alone creates the call row (no room_started ever)", async () => {
    const ev = exampleEvents("RM_left_only", "call-left", "ST_prod");
    expect((await postWebhook(t, ev.sipLeft)).status).toBe(200);
    expect(await callRow(t, "RM_left_only")).toMatchObject({ room_name: "call-left", channel: "sip", end_reason: "USER_REJECTED" });
  });

  it("a replayed event id is a no-op, even with a different body", async () => {
    const ev = exampleEvents("RM_replay", "call-replay", "ST_prod");
    const first = await postWebhook(t, ev.sipJoined);
    expect(((await first.json()) as { result: string }).result).toBe("recorded");
    const before = await snapshot("RM_replay");
    const events = await countOf(t, "call_events");
    const again = await postWebhook(t, ev.sipJoined);
    expect(again.status).toBe(200);
    expect(((await again.json()) as { result: string }).result).toBe("duplicate");
    const forged = { ...ev.sipJoined, participant: { ...ev.sipJoined.participant, identity: "changed", joinedAtMs: "1767225000000" } };
    expect(((await (await postWebhook(t, forged)).json()) as { result: string }).result).toBe("duplicate");
    expect(await countOf(t, "call_events")).toBe(events);
    expect(await snapshot("RM_replay")).toEqual(before);
  });

  it("a SIP leg on a load-test trunk marks the call and its room's requests as probe", async () => {
    const db = t.services.database.db;
    // Stored before the call is known (as ingest writes them): the webhook marks them afterwards.
    const ts = new Date();
    await seedRequests(db, [
      { id: "00000000-0000-4000-8000-000000000001", ts, room_name: "call-probe", modality: "llm", model_id: "openai/gpt-4.1-mini", provider: "openai", tenant_id: null },
      { id: "00000000-0000-4000-8000-000000000002", ts, room_name: "call-probe", modality: "stt", model_id: "deepgram/nova-3", provider: "deepgram", tenant_id: "acme" },
      { id: "00000000-0000-4000-8000-000000000003", ts, room_name: "call-prod", modality: "llm", model_id: "openai/gpt-4.1-mini", provider: "openai", tenant_id: null },
    ]);
    const probe = exampleEvents("RM_probe", "call-probe", PROBE_TRUNK);
    // The trunk attribute arrives only on participant_left (header-derived attributes may come late).
    const joinedNoTrunk = { ...probe.sipJoined, participant: { ...probe.sipJoined.participant, attributes: { "sip.callStatus": "active" } } };
    expect((await postWebhook(t, joinedNoTrunk)).status).toBe(200);
    expect(await callRow(t, "RM_probe")).toMatchObject({ is_probe: false });
    expect((await postWebhook(t, probe.sipLeft)).status).toBe(200);
    expect(await callRow(t, "RM_probe")).toMatchObject({ is_probe: true, trunk_id: PROBE_TRUNK });

    const prod = exampleEvents("RM_prod", "call-prod", "ST_production");
    expect((await postWebhook(t, prod.sipJoined)).status).toBe(200);
    expect(await callRow(t, "RM_prod")).toMatchObject({ is_probe: false, trunk_id: "ST_production" });

    const flags = await rows<{ id: string; is_probe: boolean }>(t, sql`select id, is_probe from requests order by id`);
    expect(flags.map((f) => f.is_probe)).toEqual([true, true, false]);
  });

  it("track events record the first audio track; later tracks do not replace it", async () => {
    const ev = exampleEvents("RM_tracks", "call-tracks", "ST_prod");
    const second = { ...ev.trackPublished, id: "EV_tracks_2", createdAt: "1767225650", track: { sid: "TR_second", mimeType: "audio/red" } };
    const video = { ...ev.trackPublished, id: "EV_tracks_v", createdAt: "1767225601", track: { sid: "TR_video", type: "VIDEO", mimeType: "video/vp8" } };
    const unpub = { ...ev.trackPublished, event: "track_unpublished", id: "EV_tracks_u", createdAt: "1767225660" };
    for (const e of [second, video, ev.trackPublished, unpub]) expect((await postWebhook(t, e)).status).toBe(200);
    const leg = await legRow(t, ev.sip);
    expect(leg).toMatchObject({ audio_track_sid: "TR_RM_tracks", audio_codec: "opus", kind: null });
    expect(Number(leg?.first_audio_track_at_ms)).toBe(1767225603000);
    const evs = await rows<{ event: string; track_sid: string }>(t, sql`select event, track_sid from call_events where room_sid = 'RM_tracks'`);
    expect(evs).toHaveLength(4);
    // The leg learns its kind when participant_joined arrives after its tracks.
    expect((await postWebhook(t, ev.sipJoined)).status).toBe(200);
    expect(await legRow(t, ev.sip)).toMatchObject({ kind: "SIP", audio_track_sid: "TR_RM_tracks" });
  });

  it("egress and ingress events are accepted and ignored", async () => {
    const calls = await countOf(t, "calls");
    const events = await countOf(t, "call_events");
    const ev = exampleEvents("RM_egress_only", "call-egress", "ST_prod");
    const ingress = { event: "ingress_started", room: { name: "call-egress" }, ingressInfo: { ingressId: "IN_x" }, id: "EV_in1", createdAt: "1767225600" };
    for (const e of [ev.egressEnded, ingress, { event: "egress_started", id: "EV_eg0", egressInfo: {} }]) {
      const res = await postWebhook(t, e);
      expect(res.status).toBe(200);
      expect(((await res.json()) as { result: string }).result).toBe("ignored");
    }
    expect(await countOf(t, "calls")).toBe(calls);
    expect(await countOf(t, "call_events")).toBe(events);
  });

  it("accepts application/json and refuses other content types with 415", async () => {
    const ev = exampleEvents("RM_ctype", "call-ctype", "ST_prod");
    expect((await postWebhook(t, ev.roomStarted, { contentType: "application/json; charset=utf-8" })).status).toBe(200);
    const res = await postWebhook(t, ev.roomFinished, { contentType: "text/plain" });
    expect(res.status).toBe(415);
    expect(Number((await callRow(t, "RM_ctype"))?.ended_at_ms ?? 0)).toBe(0);
  });

  it("a signed event missing what it needs is a 422 and writes nothing", async () => {
    const calls = await countOf(t, "calls");
    const events = await countOf(t, "call_events");
    for (const bad of [
      { event: "participant_joined", room: { sid: "RM_bad", name: "x" }, id: "EV_bad1" },
      { event: "room_started", room: { name: "no-sid" }, id: "EV_bad2" },
      { event: "room_started", room: { sid: "RM_bad" } },
      { event: "participant_left", room: { sid: "RM_bad" }, participant: { sid: "PA_x", joinedAt: "-5" }, id: "EV_bad3" },
      { event: "participant_left", room: { sid: "RM_bad" }, participant: { sid: "PA_x", attributes: { a: 5 } }, id: "EV_bad4" },
      { event: "room_started", room: { sid: "RM_bad\u0000" }, id: "EV_bad5" },
    ]) {
      const res = await postWebhook(t, bad);
      expect(res.status).toBe(422);
      expect(((await res.json()) as { error: { code: string } }).error.code).toBe("validation_failed");
    }
    expect(await countOf(t, "calls")).toBe(calls);
    expect(await countOf(t, "call_events")).toBe(events);
  });
});

describe("webhook credentials", () => {
  it("answers 503 and writes nothing without LiveKit credentials", async () => {
    const t = await createTestApp({ env: { LIVEKIT_API_KEY: LK_KEY } });
    try {
      const ev = exampleEvents("RM_nocreds");
      const res = await postWebhook(t, ev.roomStarted);
      expect(res.status).toBe(503);
      expect(((await res.json()) as { error: { code: string } }).error.code).toBe("unavailable");
      expect(await countOf(t, "calls")).toBe(0);
      expect(await countOf(t, "call_events")).toBe(0);
    } finally {
      await t.close();
    }
  });

  it("takes credentials from the livekit: block, and needs no bearer key even with auth on", async () => {
    const t = await createTestApp({
      yaml: `livekit: { api_key: ${LK_KEY}, api_secret: ${LK_SECRET} }\nauth: { api_keys: [ops-key-0123456789] }`,
    });
    try {
      const ev = exampleEvents("RM_yamlcreds");
      expect((await postWebhook(t, ev.roomStarted)).status).toBe(200);
      expect(await callRow(t, "RM_yamlcreds")).toMatchObject({ room_name: "call-abc" });
    } finally {
      await t.close();
    }
  });
});
