import { randomUUID } from "node:crypto";
import type { IncomingHttpHeaders, IncomingMessage } from "node:http";
import { upgradeWebSocket } from "@hono/node-server";
import type { Context } from "hono";
import type { WebSocket } from "ws";
import type { RequestRecord } from "../../client/types.js";
import type { AppEnv } from "../../http/app-env.js";
import { admitCaller, planCall } from "../admit.js";
import { type Attempt, type CallContext, recordAttempt } from "../attempt.js";
import { headersOf } from "../exchange.js";
import type { Gateway } from "../gateway.js";
import { type GatewayErrorCode, type InboundRequest, ProtocolInputError, type Units, type UpstreamTarget } from "../protocol.js";
import { connectUpstream, UPSTREAM_CONNECT_TIMEOUT_MS, UpstreamConnectError } from "./connect.js";
import { relay } from "./relay.js";
import { dropAdapterMessageListeners, holdUpstream, isWebSocketUpgrade, upgradeRequired } from "./upgrade.js";
import { subprotocolToken, type WsProtocol, type WsRoute, wsUrl } from "./ws-route.js";

type Refusal = { status: number; code: GatewayErrorCode; message: string; retryAfterSeconds?: number | null };

/**
 * One relayed WebSocket call. Everything is decided before the upgrade, so a refusal is a plain HTTP
 * status the vendor SDK reports (node-server answers a non-101 upgrade with the status and headers;
 * the envelope's code travels in X-Voxgate-Error): loopback rule, key and infer scope, attribution,
 * model, budget, then the candidates (primary, then fallbacks) through cooldowns and the limiter,
 * connecting upstream until one opens (WebSockets fail over only at connect). The open upstream is
 * then relayed to the accepted client; the stream's units are recorded in checkpoints while it runs
 * and once at its end.
 */
export async function handleWebSocket(gw: Gateway, wsp: WsProtocol, route: WsRoute, c: Context<AppEnv>): Promise<Response> {
  if (!isWebSocketUpgrade(c)) return upgradeRequired(c);
  const t0 = performance.now();
  const startedAt = Date.now();
  const requestId = randomUUID();
  const protocol = wsp.protocol;
  const incoming = (c.env as { incoming?: IncomingMessage } | undefined)?.incoming;
  const headers: IncomingHttpHeaders = incoming?.headers ?? headersOf(c, null);
  const refuse = (r: Refusal, extra: Record<string, string> = {}) => {
    const body = protocol.errorBody(r.status, r.code, r.message);
    const h: Record<string, string> = { ...extra, "content-type": body.contentType, "x-voxgate-error": r.code, "x-voxgate-request-id": requestId };
    if (r.retryAfterSeconds != null) h["retry-after"] = String(Math.max(1, Math.ceil(r.retryAfterSeconds)));
    return new Response(body.body, { status: r.status, headers: h });
  };

  const query = new URL(c.req.url).searchParams;
  const params = c.req.param() as Record<string, string>;
  // Browser SDKs can only send their key as a subprotocol (Deepgram `token, <key>`, OpenAI's prefix).
  const keyed = { ...protocol, credential: (h: IncomingHttpHeaders, q: URLSearchParams) => protocol.credential(h, q) ?? subprotocolToken(h) };
  const caller = await admitCaller(gw, keyed, { headers, query, params, remoteAddress: incoming?.socket.remoteAddress ?? null });
  if (!caller.ok) return refuse(caller);
  const inbound: InboundRequest = { method: "GET", path: route.path, params, query, headers, body: Buffer.alloc(0) };
  let named: string | null;
  try {
    named = route.model(inbound);
  } catch (err) {
    if (err instanceof ProtocolInputError) return refuse({ status: err.status, code: "invalid_request", message: err.message });
    throw err;
  }
  const plan = planCall(gw, protocol, route.modality, caller, named, { startedAt, t0, requestId });
  if (!plan.ok) return refuse(plan);
  const { ctx, chain } = plan;
  const extra = plan.extraHeaders;

  const timeoutMs = Math.min(UPSTREAM_CONNECT_TIMEOUT_MS, gw.config.gateway.first_byte_timeout_ms);
  let firstFailed: UpstreamTarget | null = null;
  let last: Refusal = { status: 503, code: "upstream_unavailable", message: "no provider could take the call" };
  for (let i = 0; i < chain.length; i++) {
    const target = chain[i] as UpstreamTarget;
    if (i < chain.length - 1 && gw.cooldowns.cooling(target.providerId)) continue;
    const limit = await gw.limiter.acquire(target.providerId);
    if (!limit.ok) {
      last = { status: 429, code: "rate_limited", message: `rate limit of provider ${target.providerId} reached (${limit.reason})`, retryAfterSeconds: limit.retryAfterMs / 1000 };
      continue;
    }
    const attempt: Attempt = { id: i === 0 ? requestId : randomUUID(), target, status: "success", units: {} };
    let upstream: Awaited<ReturnType<typeof connectUpstream>>;
    try {
      const up = route.upstream(inbound, target);
      upstream = await connectUpstream({ url: wsUrl(target.baseUrl, up.path), headers: up.headers, protocols: up.protocols ?? [], timeoutMs });
    } catch (err) {
      limit.grant.release();
      if (err instanceof ProtocolInputError) return refuse({ status: err.status, code: "invalid_request", message: err.message });
      if (!(err instanceof UpstreamConnectError)) throw err;
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
    const held = holdUpstream(upstream, () => limit.grant.release());
    const events = {
      onOpen: (_evt: Event, ws: { raw?: unknown }) => {
        const meter = route.meter(inbound, target);
        const stream = new StreamRecorder(ctx, attempt);
        // node-server's accepted socket is the `ws` server's WebSocket (createWebSocketServer).
        const client = ws.raw as WebSocket;
        relay(client, held.take(), {
          meter,
          checkpointMs: gw.config.gateway.ws_checkpoint_interval_ms,
          onCheckpoint: (units) => stream.checkpoint(units),
          rewriteClientText: route.rewriteClientText?.(target) ?? null,
          onEnd: (s) => {
            limit.grant.release();
            attempt.ttfbMs = s.ttfbMs;
            if (s.endedBy === "upstream_error") attempt.error = "upstream connection lost mid-stream";
            if (s.endedBy === "overflow") attempt.error = "relay buffer overflow: a side stopped reading";
            if (attempt.error) attempt.status = "error";
            stream.end(s.units);
          },
        });
        dropAdapterMessageListeners(client);
      },
    };
    const upgraded = await upgradeWebSocket(c, events);
    return new Response(null, { status: upgraded.status, headers: { ...extra, "x-voxgate-request-id": attempt.id } });
  }
  return refuse(last, extra);
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

function minus(total: Units, done: Units): Units {
  const out: Units = {};
  for (const k of ["inputTokens", "outputTokens", "cachedInputTokens", "audioSeconds", "characters"] as const) {
    const t = total[k];
    if (t !== undefined) out[k] = Math.max(0, t - (done[k] ?? 0));
  }
  return out;
}

/**
 * Records one stream: every checkpoint writes a row with the units since the last one (so the
 * project's today_spend, and with it a budget, moves while a long call runs), and the end writes the
 * rest under the call's request id. The rows share metadata.stream_id; their units sum to the stream's.
 */
class StreamRecorder {
  private done: Units = {};
  private checkpoints = 0;
  constructor(
    private readonly ctx: CallContext,
    private readonly attempt: Attempt,
  ) {}

  checkpoint(total: Units): void {
    const units = minus(total, this.done);
    this.done = { ...total };
    this.checkpoints++;
    const t = this.attempt.target;
    const record: RequestRecord = {
      id: randomUUID(),
      timestamp: Date.now(),
      modality: t.modality,
      model_id: t.modelId,
      provider: t.providerId,
      status: this.attempt.status === "fallback" ? "fallback" : "success",
      project: this.ctx.attribution.project,
      metadata: { via: "gateway", stream_id: this.attempt.id, checkpoint: this.checkpoints },
      ...(this.attempt.fallbackFrom && { fallback_from: this.attempt.fallbackFrom }),
      ...(this.ctx.attribution.sessionId !== null && { session_id: this.ctx.attribution.sessionId }),
      ...(units.audioSeconds !== undefined && { audio_seconds: units.audioSeconds }),
      ...(units.characters !== undefined && { characters: units.characters }),
      ...(units.inputTokens !== undefined && { input_tokens: units.inputTokens }),
      ...(units.outputTokens !== undefined && { output_tokens: units.outputTokens }),
    };
    this.ctx.gw.recorder.record(this.ctx.tenantId, record);
  }

  end(total: Units): void {
    this.attempt.units = minus(total, this.done);
    recordAttempt(this.ctx, this.attempt);
  }
}
