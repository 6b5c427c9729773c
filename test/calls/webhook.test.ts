import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestApp, type TestApp } from "../support/app.js";
import { callRow, countOf, exampleEvents, LK_KEY, LK_SECRET, legRow, postWebhook, rows } from "./support.js";

const PROBE_TRUNK = "ST_probeTrunk01";

describe("POST /v1/livekit/webhook (endpoint 38)", () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp({
      env: { LIVEKIT_API_KEY: LK_KEY, LIVEKIT_API_SECRET: LK_SECRET, VOXGATE_LOADTEST_TRUNK_IDS: `ST_other, ${PROBE_TRUNK}` },
    });
  });
  afterAll(async () => {
    await t.close();
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
