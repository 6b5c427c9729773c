import { createHash, createHmac } from "node:crypto";
import { AccessToken } from "livekit-server-sdk";
import { sql } from "drizzle-orm";
import type { TestApp } from "../support/app.js";

import { LK_KEY, LK_SECRET } from "../support/fixtures.js";

export { LK_KEY, LK_SECRET };

/** Signs a body exactly as LiveKit does: bare HS256 JWT, iss = key, sha256 = base64 SHA-256 of the bytes. */
export async function signBody(body: string | Uint8Array, key = LK_KEY, secret = LK_SECRET, ttl: string | number = "5m") {
  const at = new AccessToken(key, secret, { ttl });
  at.sha256 = createHash("sha256").update(body).digest("base64");
  return at.toJwt();
}

export async function postWebhook(
  t: TestApp,
  event: unknown,
  opts: { contentType?: string; token?: string; raw?: string | Uint8Array } = {},
): Promise<Response> {
  const raw = opts.raw ?? JSON.stringify(event);
  const token = opts.token ?? (await signBody(raw));
  return t.call("POST", "/v1/livekit/webhook", {
    raw,
    headers: { authorization: token, "content-type": opts.contentType ?? "application/webhook+json" },
  });
}

export async function rows<T = Record<string, unknown>>(t: TestApp, query: ReturnType<typeof sql>): Promise<T[]> {
  const res = (await t.services.database.db.execute(query)) as unknown as { rows: T[] };
  return res.rows;
}

export async function callRow(t: TestApp, roomSid: string) {
  return (await rows<Record<string, unknown>>(t, sql`select * from calls where room_sid = ${roomSid}`))[0];
}

export async function legRow(t: TestApp, participantSid: string) {
  return (await rows<Record<string, unknown>>(t, sql`select * from call_legs where participant_sid = ${participantSid}`))[0];
}

export async function countOf(t: TestApp, table: "calls" | "call_legs" | "call_events"): Promise<number> {
  const r = await rows<{ n: string | number }>(t, sql`select count(*) as n from ${sql.identifier(table)}`);
  return Number(r[0]?.n ?? 0);
}

/** The reference example call (livekit-webhooks.md), parameterised by room. */
export function exampleEvents(room = "RM_hycBMAjmt6Ub", name = "call-abc", trunk = "ST_probeTrunk01") {
  const sip = `PA_sip_${room}`;
  const web = `PA_web_${room}`;
  return {
    sip,
    web,
    roomStarted: {
      event: "room_started",
      room: { sid: room, name, emptyTimeout: 300, creationTime: "1767225600", creationTimeMs: "1767225600000" },
      id: `EV_${room}_1`,
      createdAt: "1767225600",
    },
    sipJoined: {
      event: "participant_joined",
      room: { sid: room, name },
      participant: {
        sid: sip,
        identity: "sip_+15105550100",
        state: "ACTIVE",
        joinedAt: "1767225602",
        joinedAtMs: "1767225602123",
        kind: "SIP",
        attributes: { "sip.callID": "SCL_dHjQbWZT9Cnu", "sip.trunkID": trunk, "sip.callStatus": "active" },
      },
      id: `EV_${room}_2`,
      createdAt: "1767225602",
    },
    trackPublished: {
      event: "track_published",
      room: { sid: room, name },
      participant: { sid: sip, identity: "sip_+15105550100" },
      track: { sid: `TR_${room}`, name: "microphone", source: "MICROPHONE", mimeType: "audio/opus" },
      id: `EV_${room}_3`,
      createdAt: "1767225603",
    },
    sipLeft: {
      event: "participant_left",
      room: { sid: room, name },
      participant: {
        sid: sip,
        identity: "sip_+15105550100",
        state: "DISCONNECTED",
        kind: "SIP",
        disconnectReason: "USER_REJECTED",
        attributes: { "sip.trunkID": trunk, "sip.callStatus": "hangup" },
      },
      id: `EV_${room}_5`,
      createdAt: "1767225695",
    },
    webAborted: {
      event: "participant_connection_aborted",
      room: { sid: room, name },
      participant: { sid: web, identity: "user-42", state: "DISCONNECTED", joinedAt: "1767225605", disconnectReason: "JOIN_FAILURE" },
      id: `EV_${room}_6`,
      createdAt: "1767225620",
    },
    roomFinished: { event: "room_finished", room: { sid: room, name }, id: `EV_${room}_7`, createdAt: "1767225720" },
    egressEnded: {
      event: "egress_ended",
      room: { sid: room, name },
      egressInfo: { egressId: "EG_f3Yk2nQ9", status: "EGRESS_COMPLETE", startedAt: "1767225603000000000" },
      id: `EV_${room}_8`,
      createdAt: "1767225697",
    },
  };
}

/** A hand-built JWS for forgery tests: any header/claims, HMAC with the given hash (or no signature). */
export function craftJwt(header: Record<string, unknown>, claims: Record<string, unknown>, secret: string, hash: "sha256" | "sha512" | "none"): string {
  const enc = (o: unknown) => Buffer.from(JSON.stringify(o)).toString("base64url");
  const input = `${enc(header)}.${enc(claims)}`;
  if (hash === "none") return `${input}.`;
  return `${input}.${createHmac(hash, secret).update(input).digest("base64url")}`;
}

export function bodyHash(body: string | Uint8Array): string {
  return createHash("sha256").update(body).digest("base64");
}
