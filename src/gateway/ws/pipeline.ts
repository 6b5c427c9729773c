import { randomUUID } from "node:crypto";
import type { IncomingHttpHeaders, IncomingMessage } from "node:http";
import type { WebSocket } from "ws";
import { admitCaller } from "../admit.js";
import type { Gateway } from "../gateway.js";
import { type InboundRequest, ProtocolInputError, type UpstreamTarget } from "../protocol.js";
import { connectChain, planFor, type Refusal, relayCall, type WsCall } from "./call.js";
import { awaitModel } from "./first-message.js";
import { StreamSession } from "./session.js";
import { openStreamBudget } from "./stream-budget.js";
import type { StreamSlot } from "./streams.js";
import { HANDSHAKE_GRACE_MS, holdUpstream } from "./upgrade.js";
import { type ClosingRefusal, subprotocolToken, type WsProtocol, type WsRoute } from "./ws-route.js";

/** A WebSocket upgrade request as the gateway listener (src/gateway/listener.ts) hands it over. */
export interface Upgrade {
  req: IncomingMessage;
  /** Route parameters (attribution prefix, voice_id), percent-decoded. */
  params: Record<string, string>;
  query: URLSearchParams;
  /** Completes the handshake (`headers` on the 101) and hands over the client's socket; never calls back when the client went away. */
  accept(headers: Record<string, string>, onOpen: (client: WebSocket) => void): void;
  /** Answers the upgrade with a status and headers, no body, and closes the connection. */
  reject(status: number, headers: Record<string, string>): void;
}

/**
 * One relayed WebSocket call, a governed StreamSession once accepted. Before the upgrade (a refusal
 * is a plain HTTP status the vendor SDK reports: the status and headers without a body, the
 * envelope's code in X-Voxgate-Error; a protocol with closeRefusal gets an upgrade and the vendor's
 * close instead): loopback rule, key and infer scope,
 * attribution, one of the key's gateway.streams.max_per_key slots (429 too_many_streams). Then:
 * - the model is named on the URL (or the route names it only inside messages and none is named):
 *   budget and model, then the candidates (primary, then fallbacks) through cooldowns and the
 *   limiter, connecting upstream until one opens (mid-stream, live STT and Cartesia TTS generations fail over: relayCall); the client
 *   is upgraded onto the open vendor socket;
 * - the route names its model inside messages and the URL names none: a spent block budget is still
 *   refused here, the upgrade completes, and the first message naming a model (or the first audio,
 *   with the project's default_stack) opens the vendor socket (src/gateway/ws/first-message.ts).
 */
export async function handleWebSocket(gw: Gateway, wsp: WsProtocol, route: WsRoute, up: Upgrade): Promise<void> {
  const t0 = performance.now();
  const startedAt = Date.now();
  const requestId = randomUUID();
  const protocol = wsp.protocol;
  const { headers } = up.req;
  const refuse = (r: Refusal, extra: Record<string, string> = {}): void => {
    const h: Record<string, string> = { ...extra, "x-voxgate-error": r.code, "x-voxgate-request-id": requestId };
    if (r.retryAfterSeconds != null) h["retry-after"] = String(Math.max(1, Math.ceil(r.retryAfterSeconds)));
    if (wsp.closeRefusal) refuseByClose(up, wsp.closeRefusal(r.status, r.code, r.message), h);
    else up.reject(r.status, { ...h, "content-type": protocol.errorBody(r.status, r.code, r.message).contentType });
  };

  const { query, params } = up;
  // Browser SDKs can only send their key as a subprotocol (Deepgram `token, <key>`, OpenAI's prefix).
  const keyed = { ...protocol, credential: (h: IncomingHttpHeaders, q: URLSearchParams) => protocol.credential(h, q) ?? subprotocolToken(h) };
  const caller = await admitCaller(gw, keyed, { headers, query, params, remoteAddress: up.req.socket.remoteAddress ?? null });
  if (!caller.ok) return refuse(caller);
  const slot = gw.streams.claim(caller.auth, keyed.credential(headers, query));
  if (!slot) return refuse({ status: 429, code: "too_many_streams", message: `this key has ${gw.streams.limits.maxPerKey} streams open (gateway.streams.max_per_key)` });

  const inbound: InboundRequest = { method: "GET", path: route.path, params, query, headers, body: Buffer.alloc(0) };
  const call: WsCall = { gw, wsp, route, inbound, caller, requestId, startedAt, t0 };
  let upgraded: boolean;
  try {
    upgraded = await openCall(call, up, slot, refuse);
  } catch (err) {
    slot.release();
    throw err;
  }
  if (!upgraded) slot.release();
}

const BUDGET_REFUSAL = (call: WsCall): Refusal => ({ status: 402, code: "budget_exceeded", message: `project ${call.caller.attribution.project} has reached its daily budget` });

/** Opens the call and upgrades the client onto it; false when it was refused (refuse() has answered). */
async function openCall(call: WsCall, up: Upgrade, slot: StreamSlot, refuse: (r: Refusal, extra?: Record<string, string>) => void): Promise<boolean> {
  const { gw, route, inbound } = call;
  let named: string | null;
  try {
    named = route.model(inbound);
  } catch (err) {
    if (!(err instanceof ProtocolInputError)) throw err;
    refuse({ status: err.status, code: "invalid_request", message: err.message });
    return false;
  }

  if (named === null && route.inBand) {
    const project = gw.table.projects.get(call.caller.attribution.project);
    if (gw.budgets.decide(project) === "block") {
      refuse(BUDGET_REFUSAL(call));
      return false;
    }
    upgradeGoverned(up, slot, { "x-voxgate-request-id": call.requestId }, (session) => awaitModel(call, session));
    return true;
  }

  const plan = planFor(call, named);
  if (!plan.ok) {
    refuse(plan);
    return false;
  }
  // A block budget's first increment is held before any vendor is contacted: no room is a 402 here.
  const budget = await openStreamBudget(call, plan.chain[0] as UpstreamTarget, plan.ctx);
  if (budget === "refused") {
    refuse(BUDGET_REFUSAL(call));
    return false;
  }
  const opened = await connectChain(call, plan);
  if (!opened.ok) {
    budget?.release();
    refuse(opened.refusal, plan.extraHeaders);
    return false;
  }
  const held = holdUpstream(opened.upstream, () => {
    opened.grant.release();
    budget?.release();
  });
  upgradeGoverned(up, slot, { ...plan.extraHeaders, "x-voxgate-request-id": opened.attempt.id }, (session) => relayCall(call, session, held.take(), plan, opened, undefined, budget));
  return true;
}

/** Upgrades the client (`headers` on the 101) and hands its socket to `start` as a governed session (holding the key's slot). */
function upgradeGoverned(up: Upgrade, slot: StreamSlot, headers: Record<string, string>, start: (session: StreamSession) => void): void {
  // A client whose handshake never completes releases its slot (and the held upstream, see holdUpstream).
  let accepted = false;
  const abandon = setTimeout(() => {
    if (!accepted) slot.release();
  }, HANDSHAKE_GRACE_MS);
  abandon.unref();
  up.accept(headers, (client) => {
    accepted = true;
    clearTimeout(abandon);
    start(new StreamSession(client, slot));
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
function refuseByClose(up: Upgrade, refusal: ClosingRefusal, headers: Record<string, string>): void {
  up.accept(headers, (client) => {
    if (refusal.frame !== undefined) client.send(refusal.frame);
    client.close(refusal.closeCode, closeReason(refusal.reason));
  });
}
