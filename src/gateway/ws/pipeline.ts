import { randomUUID } from "node:crypto";
import type { IncomingHttpHeaders, IncomingMessage } from "node:http";
import { upgradeWebSocket } from "@hono/node-server";
import type { Context } from "hono";
import type { WebSocket } from "ws";
import type { AppEnv } from "../../http/app-env.js";
import { admitCaller } from "../admit.js";
import type { Gateway } from "../gateway.js";
import { type InboundRequest, ProtocolInputError, type UpstreamTarget } from "../protocol.js";
import { connectChain, planFor, type Refusal, relayCall, type WsCall } from "./call.js";
import { awaitModel } from "./first-message.js";
import { StreamSession } from "./session.js";
import { openStreamBudget } from "./stream-budget.js";
import type { StreamSlot } from "./streams.js";
import { dropAdapterMessageListeners, HANDSHAKE_GRACE_MS, holdUpstream, isWebSocketUpgrade, upgradeRequired } from "./upgrade.js";
import { type ClosingRefusal, subprotocolToken, type WsProtocol, type WsRoute } from "./ws-route.js";

/**
 * One relayed WebSocket call, a governed StreamSession once accepted. Before the upgrade (a refusal
 * is a plain HTTP status the vendor SDK reports; node-server answers a non-101 upgrade with the
 * status and headers, the envelope's code in X-Voxgate-Error; a protocol with closeRefusal gets an
 * upgrade and the vendor's close instead): loopback rule, key and infer scope,
 * attribution, one of the key's gateway.streams.max_per_key slots (429 too_many_streams). Then:
 * - the model is named on the URL (or the route names it only inside messages and none is named):
 *   budget and model, then the candidates (primary, then fallbacks) through cooldowns and the
 *   limiter, connecting upstream until one opens (mid-stream, only live STT fails over: relayCall); the client
 *   is upgraded onto the open vendor socket;
 * - the route names its model inside messages and the URL names none: a spent block budget is still
 *   refused here, the upgrade completes, and the first message naming a model (or the first audio,
 *   with the project's default_stack) opens the vendor socket (src/gateway/ws/first-message.ts).
 */
export async function handleWebSocket(gw: Gateway, wsp: WsProtocol, route: WsRoute, c: Context<AppEnv>): Promise<Response> {
  if (!isWebSocketUpgrade(c)) return upgradeRequired(c);
  const t0 = performance.now();
  const startedAt = Date.now();
  const requestId = randomUUID();
  const protocol = wsp.protocol;
  const incoming = (c.env as { incoming?: IncomingMessage } | undefined)?.incoming;
  const headers: IncomingHttpHeaders = incoming?.headers ?? {};
  const refuse = async (r: Refusal, extra: Record<string, string> = {}): Promise<Response> => {
    const h: Record<string, string> = { ...extra, "x-voxgate-error": r.code, "x-voxgate-request-id": requestId };
    if (r.retryAfterSeconds != null) h["retry-after"] = String(Math.max(1, Math.ceil(r.retryAfterSeconds)));
    if (wsp.closeRefusal) return refuseByClose(c, wsp.closeRefusal(r.status, r.code, r.message), h);
    const body = protocol.errorBody(r.status, r.code, r.message);
    return new Response(body.body, { status: r.status, headers: { ...h, "content-type": body.contentType } });
  };

  const query = new URL(c.req.url).searchParams;
  const params = c.req.param() as Record<string, string>;
  // Browser SDKs can only send their key as a subprotocol (Deepgram `token, <key>`, OpenAI's prefix).
  const keyed = { ...protocol, credential: (h: IncomingHttpHeaders, q: URLSearchParams) => protocol.credential(h, q) ?? subprotocolToken(h) };
  const caller = await admitCaller(gw, keyed, { headers, query, params, remoteAddress: incoming?.socket.remoteAddress ?? null });
  if (!caller.ok) return refuse(caller);
  const slot = gw.streams.claim(caller.auth, keyed.credential(headers, query));
  if (!slot) return refuse({ status: 429, code: "too_many_streams", message: `this key has ${gw.streams.limits.maxPerKey} streams open (gateway.streams.max_per_key)` });

  const inbound: InboundRequest = { method: "GET", path: route.path, params, query, headers, body: Buffer.alloc(0) };
  const call: WsCall = { gw, wsp, route, inbound, caller, requestId, startedAt, t0 };
  let answer: { response: Response; upgraded: boolean };
  try {
    answer = await openCall(call, c, slot, refuse);
  } catch (err) {
    slot.release();
    throw err;
  }
  if (!answer.upgraded) slot.release();
  return answer.response;
}

const BUDGET_REFUSAL = (call: WsCall): Refusal => ({ status: 402, code: "budget_exceeded", message: `project ${call.caller.attribution.project} has reached its daily budget` });

async function openCall(
  call: WsCall,
  c: Context<AppEnv>,
  slot: StreamSlot,
  refuse: (r: Refusal, extra?: Record<string, string>) => Promise<Response>,
): Promise<{ response: Response; upgraded: boolean }> {
  const { gw, route, inbound } = call;
  let named: string | null;
  try {
    named = route.model(inbound);
  } catch (err) {
    if (err instanceof ProtocolInputError) return { response: await refuse({ status: err.status, code: "invalid_request", message: err.message }), upgraded: false };
    throw err;
  }

  if (named === null && route.inBand) {
    const project = gw.table.projects.get(call.caller.attribution.project);
    if (gw.budgets.decide(project) === "block") return { response: await refuse(BUDGET_REFUSAL(call)), upgraded: false };
    const upgraded = await upgradeGoverned(c, slot, (session) => awaitModel(call, session));
    return { response: new Response(null, { status: upgraded.status, headers: { "x-voxgate-request-id": call.requestId } }), upgraded: upgraded.status < 400 };
  }

  const plan = planFor(call, named);
  if (!plan.ok) return { response: await refuse(plan), upgraded: false };
  // A block budget's first increment is held before any vendor is contacted: no room is a 402 here.
  const budget = await openStreamBudget(call, plan.chain[0] as UpstreamTarget, plan.ctx);
  if (budget === "refused") return { response: await refuse(BUDGET_REFUSAL(call)), upgraded: false };
  const opened = await connectChain(call, plan);
  if (!opened.ok) {
    budget?.release();
    return { response: await refuse(opened.refusal, plan.extraHeaders), upgraded: false };
  }
  const held = holdUpstream(opened.upstream, () => {
    opened.grant.release();
    budget?.release();
  });
  const upgraded = await upgradeGoverned(c, slot, (session) => relayCall(call, session, held.take(), plan, opened, undefined, budget));
  return { response: new Response(null, { status: upgraded.status, headers: { ...plan.extraHeaders, "x-voxgate-request-id": opened.attempt.id } }), upgraded: upgraded.status < 400 };
}

/**
 * Upgrades the client and hands its socket to `start` as a governed session (holding the key's slot).
 * node-server answers the upgrade with a placeholder 200 (the 101 is written by the `ws` server): any
 * status under 400 means the upgrade goes ahead.
 */
async function upgradeGoverned(c: Context<AppEnv>, slot: StreamSlot, start: (session: StreamSession) => void): Promise<Response> {
  // A client whose handshake never completes releases its slot (and the held upstream, see holdUpstream).
  let accepted = false;
  const abandon = setTimeout(() => {
    if (!accepted) slot.release();
  }, HANDSHAKE_GRACE_MS);
  abandon.unref();
  return upgradeWebSocket(c, {
    onOpen: (_evt: Event, ws: { raw?: unknown }) => {
      accepted = true;
      clearTimeout(abandon);
      // node-server's accepted socket is the `ws` server's WebSocket (createWebSocketServer).
      const client = ws.raw as WebSocket;
      start(new StreamSession(client, slot));
      dropAdapterMessageListeners(client);
    },
  });
}

/** Longest close reason a WebSocket close frame carries (125 bytes of payload less the 2-byte code). */
const MAX_CLOSE_REASON_BYTES = 123;

/** A close reason cut to what a close frame carries, on a character boundary. */
export function closeReason(text: string): string {
  const bytes = Buffer.from(text);
  if (bytes.length <= MAX_CLOSE_REASON_BYTES) return text;
  let end = MAX_CLOSE_REASON_BYTES;
  while (end > 0 && ((bytes[end] ?? 0) & 0xc0) === 0x80) end--; // not inside a UTF-8 sequence
  return bytes.subarray(0, end).toString("utf8");
}

/**
 * A refusal on an open socket (WsProtocol.closeRefusal): the upgrade completes with the refusal's
 * headers on the 101, then the vendor's error frame and close. No slot is held and no vendor is dialled.
 */
async function refuseByClose(c: Context<AppEnv>, refusal: ClosingRefusal, headers: Record<string, string>): Promise<Response> {
  const answer = await upgradeWebSocket(c, {
    onOpen: (_evt: Event, ws: { raw?: unknown }) => {
      const client = ws.raw as WebSocket;
      if (refusal.frame !== undefined) client.send(refusal.frame);
      client.close(refusal.closeCode, closeReason(refusal.reason));
    },
  });
  return new Response(null, { status: answer.status, headers });
}
