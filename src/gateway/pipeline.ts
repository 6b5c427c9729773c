import { randomUUID } from "node:crypto";
import type { IncomingHttpHeaders } from "node:http";
import { type CallPlan, admitKey, loopbackRefusal, planCall } from "./admit.js";
import { defaultEstimate } from "./budget-reservations.js";
import { answerError, BodyTooLarge, type HeaderList, type Outbound, relayHeaders } from "./exchange.js";
import type { Gateway } from "./gateway.js";
import { type Attempt, type CallContext, callerTrace, failureOf, recordAttempt } from "./attempt.js";
import { headersHoldKey, KeyWatch, relayableHeaders, searchableKey, upstreamHeaders } from "./header-policy.js";
import { type InboundRequest, type Meter, type ParsedCall, ProtocolInputError, type ProxyRoute, type UpstreamRequest, type UpstreamTarget, type VendorProtocol } from "./protocol.js";
import { type BodySink, UpstreamAnswer } from "./upstream.js";

/** A proxied call's request as the gateway listener (src/gateway/listener.ts) hands it over. */
export interface ProxyInbound {
  method: string;
  /** Route parameters (attribution prefix, voice_id), percent-decoded. */
  params: Readonly<Record<string, string>>;
  headers: IncomingHttpHeaders;
  /** The raw query string, without "?". */
  query: string;
  /** Reads the whole body, BodyTooLarge beyond `limit` bytes (at once when it is already buffered). */
  readBody(limit: number): Buffer | Promise<Buffer>;
}

/**
 * One proxied call, start to end: loopback rule, key and infer permission, attribution, body, model,
 * budget, then each candidate (primary, then fallbacks) through the limiter, cooldowns and upstream,
 * streaming the answering one to the client while its meter counts units; every attempt is recorded.
 * Resolves once the answer has been written (or the client went away).
 */
export async function proxyCall(gw: Gateway, protocol: VendorProtocol, route: ProxyRoute, req: ProxyInbound, out: Outbound): Promise<void> {
  const t0 = performance.now();
  const startedAt = Date.now();
  const requestId = randomUUID();
  const { headers, params } = req;
  const fail = (status: number, code: Parameters<typeof answerError>[3], message: string, extra?: Record<string, string>, details?: unknown) =>
    answerError(out, protocol, status, code, message, requestId, extra, details);

  const query = new URLSearchParams(req.query);
  // admitCaller's stages, with the key check awaited here (one tick fewer than awaiting admitCaller).
  const refused = loopbackRefusal(gw, out.remoteAddress, headers);
  if (refused) return fail(refused.status, refused.code, refused.message);
  const caller = admitKey(await gw.authenticate(protocol.credential(headers, query)), { headers, params });
  if (!caller.ok) return fail(caller.status, caller.code, caller.message);
  const encoding = headers["content-encoding"];
  if (encoding && encoding !== "identity") return fail(415, "invalid_request", `unsupported Content-Encoding: ${encoding}`);

  let body: Buffer;
  try {
    const read = req.readBody(gw.config.serve.body_limit_bytes);
    body = read instanceof Promise ? await read : read;
  } catch (err) {
    if (err instanceof BodyTooLarge) return fail(413, "payload_too_large", `request body exceeds ${gw.config.serve.body_limit_bytes} bytes`);
    throw err;
  }
  const inbound: InboundRequest = { method: req.method, path: route.path, params, query, headers, body };
  let call: ParsedCall;
  try {
    call = route.parse(inbound);
  } catch (err) {
    if (err instanceof ProtocolInputError) return fail(err.status, "invalid_request", err.message);
    throw err;
  }
  const plan = planCall(gw, protocol, route.modality, caller, call.model, { startedAt, t0, requestId, trace: callerTrace(gw, headers) }, call.estimate ?? defaultEstimate(route.modality, body.length), call.defaultModel);
  if (!plan.ok) return fail(plan.status, plan.code, plan.message, undefined, plan.details);
  try {
    await forward(gw, protocol, route, inbound, call, plan, out, requestId, fail);
  } finally {
    // Every attempt's record is queued by now: its cost counts as spend from here on.
    plan.hold.release();
  }
}

/** Tries each candidate of the plan (primary, then fallbacks) until one answers; every attempt is recorded. */
async function forward(
  gw: Gateway,
  protocol: VendorProtocol,
  route: ProxyRoute,
  inbound: InboundRequest,
  call: ParsedCall,
  plan: CallPlan,
  out: Outbound,
  requestId: string,
  fail: (status: number, code: Parameters<typeof answerError>[3], message: string, extra?: Record<string, string>) => void,
): Promise<void> {
  const { ctx, chain, extraHeaders: extra } = plan;

  let firstFailed: UpstreamTarget | null = null;
  let lastRefusal: { status: number; code: "rate_limited" | "upstream_unavailable" | "upstream_timeout"; message: string; retryAfterMs: number } | null = null;
  for (let i = 0; i < chain.length; i++) {
    const target = chain[i] as UpstreamTarget;
    const last = i === chain.length - 1;
    if (!last && gw.cooldowns.cooling(target.providerId)) continue;
    const pending = gw.limiter.acquire(target.providerId);
    const limit = pending instanceof Promise ? await pending : pending;
    if (!limit.ok) {
      lastRefusal = { status: 429, code: "rate_limited", message: `rate limit of provider ${target.providerId} reached (${limit.reason})`, retryAfterMs: limit.retryAfterMs };
      continue;
    }
    const attempt: Attempt = { id: i === 0 ? requestId : randomUUID(), target, status: "success", units: {} };
    const handle = new UpstreamAnswer();
    out.onAbort(handle);
    let res: UpstreamAnswer;
    try {
      res = await gw.upstreams.send(target, allowedRequest(protocol, route.upstreamRequest(inbound, call, target), target), gw.config.gateway.first_byte_timeout_ms, handle);
    } catch (err) {
      limit.grant.release();
      if (out.aborted) return;
      const f = failureOf(err);
      if (f.callerFault) {
        // The caller's own request could not be sent: neither the provider's fault nor worth a fallback.
        recordAttempt(ctx, { ...attempt, status: "error", error: f.message });
        return fail(400, "invalid_request", f.message, extra);
      }
      gw.cooldowns.fail(target.providerId, null);
      recordAttempt(ctx, { ...attempt, status: "error", error: f.message });
      firstFailed ??= target;
      lastRefusal = { status: f.timeout ? 504 : 502, code: f.timeout ? "upstream_timeout" : "upstream_unavailable", message: `${target.modelId}: ${f.message}`, retryAfterMs: 0 };
      continue;
    }
    const retryable = res.statusCode === 429 || res.statusCode >= 500;
    if (retryable && !last) {
      gw.cooldowns.fail(target.providerId, headerOf(res.headers, "retry-after"));
      await res.dump();
      limit.grant.release();
      recordAttempt(ctx, { ...attempt, status: "error", error: `upstream answered ${res.statusCode}` });
      firstFailed ??= target;
      continue;
    }
    if (retryable) gw.cooldowns.fail(target.providerId, headerOf(res.headers, "retry-after"));
    if (firstFailed) {
      attempt.status = "fallback";
      attempt.fallbackFrom = firstFailed.modelId;
    }
    try {
      await relay(ctx, out, res, route, call, attempt, extra, protocol);
    } finally {
      limit.grant.release();
    }
    return;
  }
  // Every candidate failed before answering, or was refused by its limit.
  const r = lastRefusal ?? { status: 503, code: "upstream_unavailable" as const, message: "no provider could take the call", retryAfterMs: 0 };
  const retryHeader: Record<string, string> = r.retryAfterMs > 0 ? { "retry-after": String(Math.max(1, Math.ceil(r.retryAfterMs / 1000))) } : {};
  fail(r.status, r.code, r.message, { ...extra, ...retryHeader });
}

/** The upstream request with its headers cut to the vendor's allowlist and the provider's auth (src/gateway/header-policy.ts). */
function allowedRequest(protocol: VendorProtocol, req: UpstreamRequest, target: UpstreamTarget): UpstreamRequest {
  const headers = upstreamHeaders(protocol.id, req.headers, protocol.upstreamAuth(target));
  return headers === req.headers ? req : { ...req, headers };
}

/** An error answer is held back (to be searched for the provider's key) up to this many bytes. */
const MAX_HELD_ERROR_BYTES = 256 * 1024;

/**
 * Streams the answering attempt to the client as it arrives, metering every chunk, then records it.
 * Each chunk is written before the meter scans it, and the answer is ended before its units are read
 * (the JSON meter parses the usage block there): the client does not wait for Voxgate's accounting.
 * TTFB is still read when the chunk arrived, before the write.
 *
 * Only the vendor's allowlisted headers are relayed, and never the provider's key: an answer whose
 * headers hold it becomes a neutral 502; an error answer (held whole, it is small) likewise; a
 * success answer in which it appears is cut before that chunk. The operator log says which.
 */
function relay(
  ctx: CallContext,
  out: Outbound,
  res: UpstreamAnswer,
  route: ProxyRoute,
  call: ParsedCall,
  attempt: Attempt,
  extra: Record<string, string>,
  protocol: VendorProtocol,
): Promise<void> {
  if (headersHoldKey(res.headers, attempt.target.apiKey)) {
    withheld(ctx, attempt, res.statusCode, "headers");
    recordAttempt(ctx, attempt);
    answerError(out, protocol, 502, "upstream_unavailable", `${attempt.target.modelId}: the provider's answer was withheld`, attempt.id, extra);
    return res.dump();
  }
  const meter = route.meter(call, attempt.target);
  meter.headers?.(res.statusCode, res.headers);
  const sink = new RelaySink(ctx, out, res, attempt, extra, protocol, meter);
  if (!sink.held) out.head(res.statusCode, sink.head);
  return new Promise<void>((resolve) => {
    sink.done = resolve;
    res.stream(sink);
  });
}

/** Marks an attempt whose answer held the provider's key (`where`: headers, body or error body) and tells the operator. */
function withheld(ctx: CallContext, attempt: Attempt, status: number, where: string): void {
  ctx.gw.log.warn({ provider: attempt.target.providerId, model: attempt.target.modelId, status, where }, "upstream answer withheld: it contained the provider's key");
  attempt.status = "error";
  attempt.error = "upstream answer withheld (it contained the provider credential)";
}

/** relay()'s sink for the answer's body: one object per call, no closures. */
class RelaySink implements BodySink {
  readonly head: HeaderList;
  /** An error answer is held until its end (or MAX_HELD_ERROR_BYTES) so a key in it can still be refused. */
  held: Buffer[] | null;
  /** Resolves relay()'s promise (set right after construction). */
  done: (() => void) | null = null;
  private readonly watch: KeyWatch | null;
  private heldBytes = 0;
  private ttfb: number | null = null;
  private leaked = false;

  constructor(
    private readonly ctx: CallContext,
    private readonly out: Outbound,
    private readonly res: UpstreamAnswer,
    private readonly attempt: Attempt,
    private readonly extra: Record<string, string>,
    private readonly protocol: VendorProtocol,
    private readonly meter: Meter,
  ) {
    const key = searchableKey(attempt.target.apiKey);
    this.watch = key ? new KeyWatch(key) : null;
    this.head = relayHeaders(relayableHeaders(protocol.id, res.headers), extra, attempt.id);
    this.held = key && res.statusCode >= 400 ? [] : null;
  }

  data(chunk: Buffer): boolean {
    const arrived = this.ttfb === null ? performance.now() : 0;
    if (this.leaked) return true;
    const { out, res } = this;
    if (this.watch?.push(chunk)) {
      this.leaked = true;
      withheld(this.ctx, this.attempt, res.statusCode, this.held ? "error body" : "body");
      res.abort();
      return true;
    }
    let flowing = true;
    if (this.held) {
      this.held.push(chunk);
      this.heldBytes += chunk.byteLength;
      if (this.heldBytes > MAX_HELD_ERROR_BYTES) {
        out.head(res.statusCode, this.head);
        for (const c of this.held) flowing = out.write(c);
        this.held = null;
      }
    } else flowing = out.write(chunk);
    const first = this.meter.chunk(chunk);
    if (this.ttfb === null && first !== false) this.ttfb = arrived - this.ctx.t0;
    if (flowing) return true;
    void out.drained().then(() => res.resume());
    return false;
  }

  end(err: Error | null): void {
    const { out, res, attempt, held, leaked } = this;
    const aborted = out.aborted;
    const complete = err === null && !aborted && !leaked;
    if (held && leaked) {
      answerError(out, this.protocol, 502, "upstream_unavailable", `${attempt.target.modelId}: the provider's answer was withheld`, attempt.id, this.extra);
    } else {
      if (held) {
        out.head(res.statusCode, this.head);
        for (const c of held) out.write(c);
      }
      out.end(!complete);
    }
    attempt.ttfbMs = this.ttfb;
    attempt.units = this.meter.units(complete);
    if (leaked) {
      // status and error set by withheld()
    } else if (res.statusCode >= 400) {
      attempt.status = "error";
      attempt.error = `upstream answered ${res.statusCode}`;
    } else if (!complete) {
      attempt.status = "error";
      attempt.error = aborted ? "client disconnected before the answer ended" : "upstream answer cut off";
    }
    recordAttempt(this.ctx, attempt);
    this.done?.();
  }
}

function headerOf(h: IncomingHttpHeaders, name: string): string | null {
  const v = h[name];
  return (Array.isArray(v) ? v[0] : v) ?? null;
}
