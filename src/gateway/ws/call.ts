import { randomUUID } from "node:crypto";
import type { WebSocket } from "ws";
import { type Caller, type CallPlan, planCall } from "../admit.js";
import { type Attempt, type CallContext, callerTrace, recordAttempt } from "../attempt.js";
import type { Gateway } from "../gateway.js";
import { upstreamHeaders } from "../header-policy.js";
import type { LimitGrant } from "../limiter.js";
import { type GatewayErrorCode, type InboundRequest, ProtocolInputError, type UpstreamTarget } from "../protocol.js";
import { LegSwitch } from "../failover/legs.js";
import type { Leg, LegBridge } from "../failover/switching-upstream.js";
import { TtsLegs } from "../failover/tts-legs.js";
import { voiceMap } from "../failover/voices.js";
import { connectUpstream, UPSTREAM_CONNECT_TIMEOUT_MS, UpstreamConnectError } from "./connect.js";
import type { StreamMeter } from "./relay.js";
import type { StreamSession, StreamSpendHook } from "./session.js";
import { fallbackChain } from "../resolve.js";
import { type StreamModels, type WsProtocol, type WsRoute, wsUrl } from "./ws-route.js";

export type Refusal = { status: number; code: GatewayErrorCode; message: string; retryAfterSeconds?: number | null };

/** One WebSocket call being set up: what every step of it shares. */
export interface WsCall {
  gw: Gateway;
  wsp: WsProtocol;
  route: WsRoute;
  inbound: InboundRequest;
  caller: Caller;
  requestId: string;
  startedAt: number;
  t0: number;
}

export function planFor(call: WsCall, named: string | null): CallPlan | ({ ok: false } & Refusal) {
  return planCall(call.gw, call.wsp.protocol, call.route.modality, call.caller, named, { startedAt: call.startedAt, t0: call.t0, requestId: call.requestId, trace: callerTrace(call.gw, call.inbound.headers) });
}

export interface OpenedUpstream {
  ok: true;
  upstream: WebSocket;
  target: UpstreamTarget;
  attempt: Attempt;
  grant: LimitGrant;
  /** The target's place in the chain it was opened from. */
  index: number;
  /** The bridge its socket needs when the target speaks another protocol than the route's (a live failover). */
  bridge: LegBridge | null;
}

/** A candidate of a live stream: its target, and the bridge to it when it speaks another protocol than the route's. */
interface Candidate {
  target: UpstreamTarget;
  bridge: LegBridge | null;
}

/** The plan's chain as candidates: every one speaks the route's protocol. */
const ownChain = (plan: CallPlan): Candidate[] => plan.chain.map((target) => ({ target, bridge: null }));

/** Tries the plan's candidates in order until one vendor socket opens; failed attempts are recorded. */
export async function connectChain(
  call: WsCall,
  plan: CallPlan,
  /** A live failover: the stream's candidates after `from` in `chain`, each a fallback from `failed`. */
  after?: { from: number; failed: UpstreamTarget; chain: readonly Candidate[] },
): Promise<OpenedUpstream | { ok: false; refusal: Refusal }> {
  const { gw, route, inbound } = call;
  const { ctx } = plan;
  const chain = after?.chain ?? ownChain(plan);
  const timeoutMs = Math.min(UPSTREAM_CONNECT_TIMEOUT_MS, gw.config.gateway.first_byte_timeout_ms);
  let firstFailed: UpstreamTarget | null = after?.failed ?? null;
  let last: Refusal = { status: 503, code: "upstream_unavailable", message: "no provider could take the call" };
  for (let i = after ? after.from + 1 : 0; i < chain.length; i++) {
    const { target, bridge } = chain[i] as Candidate;
    if (i < chain.length - 1 && gw.cooldowns.cooling(target.providerId)) continue;
    const limit = await gw.limiter.acquire(target.providerId);
    if (!limit.ok) {
      last = { status: 429, code: "rate_limited", message: `rate limit of provider ${target.providerId} reached (${limit.reason})`, retryAfterSeconds: limit.retryAfterMs / 1000 };
      continue;
    }
    const attempt: Attempt = { id: i === 0 ? call.requestId : randomUUID(), target, status: "success", units: {} };
    // A leg opened mid-stream belongs to the stream it continues.
    if (after) attempt.metadata = { stream_id: call.requestId };
    let upstream: WebSocket;
    try {
      const up: ReturnType<WsRoute["upstream"]> | null = bridge ? bridge.upstream(target) : route.upstream(inbound, target, voiceMap(gw.config));
      if (up === null) {
        // A candidate of another protocol that cannot translate this stream: skipped, nothing recorded.
        limit.grant.release();
        continue;
      }
      const protocol = bridge ? bridge.protocol : call.wsp.protocol;
      const headers = upstreamHeaders(protocol.id, up.headers, protocol.upstreamAuth(target));
      const base = up.baseUrl ?? target.baseUrl;
      upstream = await connectUpstream({ url: wsUrl(base, up.path), headers, protocols: up.protocols ?? [], timeoutMs, lookup: gw.upstreams.lookupFor(base) });
    } catch (err) {
      limit.grant.release();
      if (err instanceof ProtocolInputError) return { ok: false, refusal: { status: err.status, code: "invalid_request", message: err.message } };
      if (!(err instanceof UpstreamConnectError)) throw err;
      // The tenant's row gets the neutral message; the address goes to the operator log only.
      if (err.detail) gw.log.warn({ provider: target.providerId, model: target.modelId, detail: err.detail }, "upstream WebSocket connect failed");
      recordAttempt(ctx, { ...attempt, status: "error", error: err.message });
      if (err.retryable) gw.cooldowns.fail(target.providerId, err.retryAfterSeconds === null ? null : String(err.retryAfterSeconds));
      firstFailed ??= target;
      last = refusalOf(err, target);
      if (!err.retryable) break;
      continue;
    }
    if (firstFailed) {
      attempt.status = "fallback";
      attempt.fallbackFrom = firstFailed.modelId;
    }
    return { ok: true, upstream, target, attempt, grant: limit.grant, index: i, bridge };
  }
  return { ok: false, refusal: last };
}

/**
 * Relays an accepted session to its open vendor socket, with the route's meter and model gate (and
 * its budget hook). A live STT route with candidates left in the chain relays through a LegSwitch:
 * the stream fails over mid-call (src/gateway/failover/legs.ts); a TTS route through TtsLegs: a
 * generation the vendor fails before its first audio is retried on the next candidate
 * (src/gateway/failover/tts-legs.ts).
 */
export function relayCall(
  call: WsCall,
  session: StreamSession,
  upstream: WebSocket,
  plan: CallPlan,
  opened: OpenedUpstream,
  queued?: Array<{ frame: Buffer; isBinary: boolean }>,
  budget: StreamSpendHook | null = null,
): void {
  const { route, inbound } = call;
  const meter = route.meter(inbound, opened.target);
  const legs = liveLegs(call, plan, opened, upstream, meter) ?? ttsLegs(call, plan, opened, upstream, meter);
  if (budget) session.hooks.push(budget);
  // The model gate bills and unbills on the ledger of whichever leg is current.
  const gateMeter = legs instanceof TtsLegs ? (legs.gateMeter as StreamMeter) : meter;
  session.relayTo(legs ?? upstream, plan.ctx, opened.attempt, {
    meter: legs?.meter ?? meter,
    legs,
    checkpointMs: call.gw.config.gateway.ws_checkpoint_interval_ms,
    clientText: route.clientText?.(opened.target, streamModels(call, session, opened.target), gateMeter) ?? null,
    queued,
    onEnd: () => (legs ? legs.current.release() : opened.grant.release()),
  });
}

/** The leg switch of a live STT stream, or null when it cannot fail over (no candidate left, audio not raw). */
function liveLegs(call: WsCall, plan: CallPlan, opened: OpenedUpstream, upstream: WebSocket, meter: StreamMeter): LegSwitch | null {
  const { gw, route, inbound } = call;
  if (!route.failover) return null;
  const chain = liveChain(call, plan);
  const at = chain.findIndex((c) => c.target.modelId === opened.target.modelId);
  if (at < 0 || at >= chain.length - 1) return null;
  const wire = route.failover(inbound);
  if (!wire) return null;
  const limits = gw.streams.limits;
  const { first, next } = legOpener(call, plan, { ...opened, index: at }, upstream, meter, chain);
  return new LegSwitch({
    first,
    wire,
    stallMs: limits.vendorStallMs,
    replaySeconds: limits.replaySeconds,
    next,
  });
}

/**
 * A live STT stream's candidates in fallbacks.stt order: the plan's chain, with the candidates of
 * other protocols placed among them where the route has a bridge that translates this stream (a
 * Deepgram client's linear16 to an OpenAI realtime transcription model); others are skipped.
 */
function liveChain(call: WsCall, plan: CallPlan): Candidate[] {
  return chainWith(call, plan, call.route.crossFailover?.(call.inbound) ?? []);
}

/** The plan's chain with the candidates of other protocols that `bridges` reach, in their fallbacks order. */
function chainWith(call: WsCall, plan: CallPlan, bridges: readonly LegBridge[]): Candidate[] {
  const { gw, route, wsp } = call;
  const own = wsp.protocol.providerTypes;
  if (bridges.length === 0) return ownChain(plan);
  const primary = plan.chain[0] as UpstreamTarget;
  const speaks = { modality: route.modality, providerTypes: [...own, ...bridges.flatMap((b) => b.providerTypes)] };
  return [primary, ...fallbackChain(gw.table, speaks, primary)].map((target) => ({
    target,
    bridge: own.includes(target.providerType) ? null : (bridges.find((b) => b.providerTypes.includes(target.providerType)) ?? null),
  }));
}

/**
 * The leg switch of a TTS stream whose generations are retried on the next candidate, or null (no
 * candidate left). Candidates of another vendor are reached through the route's bridges, which read
 * the stream's latest generation request (its voice and output format) at the seam.
 */
function ttsLegs(call: WsCall, plan: CallPlan, opened: OpenedUpstream, upstream: WebSocket, meter: StreamMeter): TtsLegs | null {
  const { gw, route } = call;
  if (!route.ttsFailover) return null;
  const voices = voiceMap(gw.config);
  let legs: TtsLegs | null = null;
  const chain = chainWith(call, plan, route.ttsCrossFailover?.(voices, () => legs?.latestRequest() ?? null) ?? []);
  const at = chain.findIndex((c) => c.target.modelId === opened.target.modelId);
  if (at < 0 || at >= chain.length - 1) return null;
  const { first, next } = legOpener(call, plan, { ...opened, index: at }, upstream, meter, chain);
  legs = new TtsLegs({ first, wire: route.ttsFailover(voices), stallMs: gw.streams.limits.vendorStallMs, next });
  return legs;
}

/** Model questions of a running stream: resolve a model named in a message, refuse one in-band. */
export function streamModels(call: WsCall, session: StreamSession, current: UpstreamTarget): StreamModels {
  return {
    resolve(named) {
      const plan = planFor(call, named);
      if (!plan.ok) return { ok: false, code: plan.code, message: plan.message };
      const target = plan.chain[0] as UpstreamTarget;
      // One vendor socket serves one provider: another provider's model cannot run on it.
      if (target.providerId !== current.providerId) {
        return { ok: false, code: "model_not_found", message: `${target.modelId} is not served by this stream (provider ${current.providerId}); open another stream for it` };
      }
      return { ok: true, target };
    },
    refuse(frame, named, code, message) {
      const { inBand, errorFrame } = call.route;
      const answer = inBand ? inBand.error(frame, code, message) : (errorFrame?.(code, message, frame) ?? null);
      if (answer !== null) session.sendToClient(answer);
      recordRefused(call, named, message);
    },
    voice: (requested) => voiceMap(call.gw.config).on(requested, current.providerId),
  };
}

/** A model a message named and the stream could not serve, recorded as a refused attempt (no units). */
export function recordRefused(call: WsCall, named: string, message: string): void {
  const { gw, route, caller } = call;
  const ctx: CallContext = { gw, route: { modality: route.modality }, tenantId: caller.auth.tenantId, attribution: caller.attribution, startedAt: Date.now(), t0: performance.now(), throttledFrom: null, trace: callerTrace(gw, call.inbound.headers) };
  const providerType = call.wsp.protocol.providerTypes[0] ?? "openai";
  const target: UpstreamTarget = { modelId: named.slice(0, 200), modality: route.modality, providerId: providerType, providerType, modelName: named, baseUrl: "", apiKey: "" };
  recordAttempt(ctx, { id: randomUUID(), target, status: "error", error: `refused in-band: ${message}`, units: {}, metadata: { stream_id: call.requestId } });
}

/** A failed connect as the client's answer: a provider 4xx (other than 429 and its own auth) passes on. */
function refusalOf(err: UpstreamConnectError, target: UpstreamTarget): Refusal {
  if (err.kind === "timeout") return { status: 504, code: "upstream_timeout", message: `${target.modelId}: ${err.message}` };
  if (err.status === 429) return { status: 429, code: "rate_limited", message: `${target.modelId}: the provider is rate limiting`, retryAfterSeconds: err.retryAfterSeconds };
  if (err.status !== null && err.status >= 400 && err.status < 500 && err.status !== 401 && err.status !== 403) {
    return { status: err.status, code: "invalid_request", message: `${target.modelId}: the provider refused the stream's parameters (${err.status})` };
  }
  return { status: 502, code: "upstream_unavailable", message: `${target.modelId}: ${err.message}` };
}

/**
 * A stream's first leg and how the next is opened at a seam (both leg switches): the failed vendor
 * cools down, so new streams (and this one's next seam) go elsewhere first; the chain goes on after it.
 */
function legOpener(call: WsCall, plan: CallPlan, opened: OpenedUpstream, upstream: WebSocket, meter: StreamMeter, chain: readonly Candidate[] = ownChain(plan)) {
  const { gw, route, inbound, wsp } = call;
  const routeLabel = `${wsp.protocol.prefix}${route.path}`;
  const index = new Map<Leg, number>();
  const first: Leg = { socket: upstream, target: opened.target, meter, attempt: opened.attempt, release: () => opened.grant.release(), offset: 0 };
  index.set(first, opened.index);
  const next = async (failed: Leg): Promise<Leg | null> => {
    gw.cooldowns.fail(failed.target.providerId, null);
    const o = await connectChain(call, plan, { from: index.get(failed) ?? opened.index, failed: failed.target, chain });
    if (!o.ok) return null;
    gw.streams.countFailover(routeLabel, failed.target.providerId, o.target.providerId);
    // A vendor of another protocol is reached through its bridge, which speaks the client's protocol.
    const side = o.bridge ? o.bridge.leg(o.upstream, o.target, call.requestId) : { socket: o.upstream, meter: route.meter(inbound, o.target) };
    const leg: Leg = { socket: side.socket, target: o.target, meter: side.meter, attempt: o.attempt, release: () => o.grant.release(), offset: 0 };
    index.set(leg, o.index);
    return leg;
  };
  return { first, next };
}
