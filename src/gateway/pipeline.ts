import { randomUUID } from "node:crypto";
import type { IncomingHttpHeaders } from "node:http";
import type { AuthContext } from "../auth/context.js";
import { type CallPlan, type Caller, admitKey, loopbackRefusal, planCall } from "./admit.js";
import { defaultEstimate } from "./budget-reservations.js";
import { answerError, BodyTooLarge, type HeaderList, type Outbound, relayHeaders } from "./exchange.js";
import type { Gateway } from "./gateway.js";
import { type Attempt, type CallContext, callerTrace, failureOf, recordAttempt } from "./attempt.js";
import { headersHoldKey, KeyWatch, relayableHeaders, searchableKey, upstreamHeaders } from "./header-policy.js";
import { type InboundRequest, type Meter, type ParsedCall, ProtocolInputError, type ProxyRoute, type UpstreamRequest, type UpstreamTarget, type VendorProtocol } from "./protocol.js";
import type { LimitDecision, LimitGrant } from "./limiter.js";
import { type AnswerWaiter, type BodySink, UpstreamAnswer } from "./upstream.js";

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
 * Driven by one object (ProxiedCall) whose steps run as soon as what they wait for is there: a cached
 * key, a buffered body and a free limiter answer at once, the upstream answer calls it back. No async
 * frame, promise or microtask per step (≈ 5 promise jobs per call before, 2026-11-28). A promise is
 * returned only while a step waits on one (a vk_ key looked up, a body still arriving, a fleet limit);
 * an error thrown by a later step (in an upstream callback) is answered by `thrown`.
 */
export function proxyCall(gw: Gateway, protocol: VendorProtocol, route: ProxyRoute, req: ProxyInbound, out: Outbound, thrown: (err: unknown) => void): Promise<void> | undefined {
  return new ProxiedCall(gw, protocol, route, req, out, thrown).start();
}

type ErrorCode = Parameters<typeof answerError>[3];
type Refused = { status: number; code: "rate_limited" | "upstream_unavailable" | "upstream_timeout"; message: string; retryAfterMs: number };

/** proxyCall's state: the call's steps as methods, the upstream answer's callbacks (AnswerWaiter) included. */
class ProxiedCall implements AnswerWaiter {
  private readonly t0 = performance.now();
  private readonly startedAt = Date.now();
  private readonly requestId = randomUUID();
  private readonly query: URLSearchParams;
  private inbound: InboundRequest | null = null;
  private call: ParsedCall | null = null;
  private plan: CallPlan | null = null;
  /** The candidate being tried (an index into plan.chain). */
  private i = 0;
  private firstFailed: UpstreamTarget | null = null;
  private lastRefusal: Refused | null = null;
  private attempt: Attempt | null = null;
  private grant: LimitGrant | null = null;
  private holdReleased = false;

  constructor(
    private readonly gw: Gateway,
    private readonly protocol: VendorProtocol,
    private readonly route: ProxyRoute,
    private readonly req: ProxyInbound,
    private readonly out: Outbound,
    private readonly thrown: (err: unknown) => void,
  ) {
    this.query = new URLSearchParams(req.query);
  }

  private fail(status: number, code: ErrorCode, message: string, extra?: Record<string, string>, details?: unknown): undefined {
    return answerError(this.out, this.protocol, status, code, message, this.requestId, extra, details);
  }

  start(): Promise<void> | undefined {
    const { gw, req } = this;
    // Stage 1 (admitCaller's stages), with the key check answered at once when it is known.
    const refused = loopbackRefusal(gw, this.out.remoteAddress, req.headers);
    if (refused) return this.fail(refused.status, refused.code, refused.message);
    const auth = gw.authenticate(this.protocol.credential(req.headers, this.query));
    return auth instanceof Promise ? auth.then((a) => this.admitted(a)) : this.admitted(auth);
  }

  private admitted(auth: AuthContext): Promise<void> | undefined {
    const { gw, req } = this;
    const caller = admitKey(auth, req);
    if (!caller.ok) return this.fail(caller.status, caller.code, caller.message);
    const encoding = req.headers["content-encoding"];
    if (encoding && encoding !== "identity") return this.fail(415, "invalid_request", `unsupported Content-Encoding: ${encoding}`);
    let read: Buffer | Promise<Buffer>;
    try {
      read = req.readBody(gw.config.serve.body_limit_bytes);
    } catch (err) {
      return this.bodyFailed(err);
    }
    if (read instanceof Promise) {
      return read.then(
        (body) => this.planned(caller, body),
        (err: unknown) => this.bodyFailed(err),
      );
    }
    return this.planned(caller, read);
  }

  private bodyFailed(err: unknown): undefined {
    if (err instanceof BodyTooLarge) return this.fail(413, "payload_too_large", `request body exceeds ${this.gw.config.serve.body_limit_bytes} bytes`);
    throw err;
  }

  private planned(caller: Caller, body: Buffer): Promise<void> | undefined {
    const { gw, protocol, route, req } = this;
    const inbound: InboundRequest = { method: req.method, path: route.path, params: req.params, query: this.query, headers: req.headers, body };
    let call: ParsedCall;
    try {
      call = route.parse(inbound);
    } catch (err) {
      if (err instanceof ProtocolInputError) return this.fail(err.status, "invalid_request", err.message);
      throw err;
    }
    const clock = { startedAt: this.startedAt, t0: this.t0, requestId: this.requestId, trace: callerTrace(gw, req.headers) };
    const plan = planCall(gw, protocol, route.modality, caller, call.model, clock, call.estimate ?? defaultEstimate(route.modality, body.length), call.defaultModel);
    if (!plan.ok) return this.fail(plan.status, plan.code, plan.message, undefined, plan.details);
    this.inbound = inbound;
    this.call = call;
    this.plan = plan;
    try {
      return this.next();
    } catch (err) {
      this.ended();
      throw err;
    }
  }

  /** Tries the candidates from the current one on until one is sent (its answer calls back) or none is left. */
  private next(): Promise<void> | undefined {
    const { gw } = this;
    const chain = (this.plan as CallPlan).chain;
    for (; this.i < chain.length; this.i++) {
      const target = chain[this.i] as UpstreamTarget;
      if (this.i < chain.length - 1 && gw.cooldowns.cooling(target.providerId)) continue;
      const pending = gw.limiter.acquire(target.providerId);
      if (pending instanceof Promise) {
        return pending.then((limit) => {
          if (this.limited(target, limit)) return;
          this.i++;
          return this.next();
        });
      }
      if (this.limited(target, pending)) return;
    }
    this.exhausted();
    return undefined;
  }

  /** Sends the attempt on `target` when its limit allows (true: sent, its answer calls back). */
  private limited(target: UpstreamTarget, limit: LimitDecision): boolean {
    if (!limit.ok) {
      this.lastRefusal = { status: 429, code: "rate_limited", message: `rate limit of provider ${target.providerId} reached (${limit.reason})`, retryAfterMs: limit.retryAfterMs };
      return false;
    }
    const { gw, protocol, route } = this;
    this.grant = limit.grant;
    this.attempt = { id: this.i === 0 ? this.requestId : randomUUID(), target, status: "success", units: {} };
    const answer = new UpstreamAnswer(this);
    this.out.onAbort(answer);
    let req: UpstreamRequest;
    try {
      req = allowedRequest(protocol, route.upstreamRequest(this.inbound as InboundRequest, this.call as ParsedCall, target), target);
    } catch (err) {
      // Not sendable (a header or body the HTTP client refuses): a failure of this attempt, as a send's.
      this.failed(err as Error);
      return true;
    }
    gw.upstreams.send(target, req, gw.config.gateway.first_byte_timeout_ms, answer);
    return true;
  }

  /** The attempt failed before an answer (AnswerWaiter): the caller's fault, or the next candidate. */
  failed(err: Error): void {
    const { gw } = this;
    const attempt = this.attempt as Attempt;
    const ctx = (this.plan as CallPlan).ctx;
    const target = attempt.target;
    this.releaseGrant();
    if (this.out.aborted) {
      this.ended();
      return;
    }
    const f = failureOf(err);
    recordAttempt(ctx, { ...attempt, status: "error", error: f.message });
    if (f.callerFault) {
      // The caller's own request could not be sent: neither the provider's fault nor worth a fallback.
      this.fail(400, "invalid_request", f.message, (this.plan as CallPlan).extraHeaders);
      this.ended();
      return;
    }
    gw.cooldowns.fail(target.providerId, null);
    this.firstFailed ??= target;
    this.lastRefusal = { status: f.timeout ? 504 : 502, code: f.timeout ? "upstream_timeout" : "upstream_unavailable", message: `${target.modelId}: ${f.message}`, retryAfterMs: 0 };
    // The next candidate from a fresh stack, not from inside the HTTP client's error callback.
    queueMicrotask(() => this.resumeAfter());
  }

  /** The attempt's answer started (AnswerWaiter): a retryable one makes way for the next candidate, else it is relayed. */
  answered(res: UpstreamAnswer): void {
    try {
      const { gw } = this;
      const plan = this.plan as CallPlan;
      const attempt = this.attempt as Attempt;
      const last = this.i === plan.chain.length - 1;
      const retryable = res.statusCode === 429 || res.statusCode >= 500;
      if (retryable && !last) {
        gw.cooldowns.fail(attempt.target.providerId, headerOf(res.headers, "retry-after"));
        res.dump(() => {
          this.releaseGrant();
          recordAttempt(plan.ctx, { ...attempt, status: "error", error: `upstream answered ${res.statusCode}` });
          this.firstFailed ??= attempt.target;
          queueMicrotask(() => this.resumeAfter());
        });
        return;
      }
      if (retryable) gw.cooldowns.fail(attempt.target.providerId, headerOf(res.headers, "retry-after"));
      if (this.firstFailed) {
        attempt.status = "fallback";
        attempt.fallbackFrom = this.firstFailed.modelId;
      }
      relay(plan.ctx, this.out, res, this.route, this.call as ParsedCall, attempt, plan.extraHeaders, this.protocol, this);
    } catch (err) {
      this.releaseGrant();
      this.ended();
      this.thrown(err);
    }
  }

  /** The relayed answer ended and its record is queued. */
  relayed(): void {
    this.releaseGrant();
    this.ended();
  }

  private resumeAfter(): void {
    this.i++;
    try {
      const p = this.next();
      p?.catch((err: unknown) => {
        this.ended();
        this.thrown(err);
      });
    } catch (err) {
      this.ended();
      this.thrown(err);
    }
  }

  /** Every candidate failed before answering, or was refused by its limit. */
  private exhausted(): void {
    const r = this.lastRefusal ?? { status: 503, code: "upstream_unavailable" as const, message: "no provider could take the call", retryAfterMs: 0 };
    const retryHeader: Record<string, string> = r.retryAfterMs > 0 ? { "retry-after": String(Math.max(1, Math.ceil(r.retryAfterMs / 1000))) } : {};
    this.fail(r.status, r.code, r.message, { ...(this.plan as CallPlan).extraHeaders, ...retryHeader });
    this.ended();
  }

  private releaseGrant(): void {
    const grant = this.grant;
    this.grant = null;
    grant?.release();
  }

  /** Every attempt's record is queued by now: its cost counts as spend from here on (the hold released once). */
  private ended(): void {
    if (this.holdReleased) return;
    this.holdReleased = true;
    this.plan?.hold.release();
  }
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
  done: RelayDone,
): void {
  if (headersHoldKey(res.headers, attempt.target.apiKey)) {
    withheld(ctx, attempt, res.statusCode, "headers");
    recordAttempt(ctx, attempt);
    answerError(out, protocol, 502, "upstream_unavailable", `${attempt.target.modelId}: the provider's answer was withheld`, attempt.id, extra);
    res.dump(() => done.relayed());
    return;
  }
  const meter = route.meter(call, attempt.target);
  meter.headers?.(res.statusCode, res.headers);
  const sink = new RelaySink(ctx, out, res, attempt, extra, protocol, meter, done);
  if (!sink.held) out.head(res.statusCode, sink.head);
  res.stream(sink);
}

/** Told when a relayed answer has ended and its record is queued (ProxiedCall). */
interface RelayDone {
  relayed(): void;
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
    private readonly done: RelayDone,
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
    this.done.relayed();
  }
}

function headerOf(h: IncomingHttpHeaders, name: string): string | null {
  const v = h[name];
  return (Array.isArray(v) ? v[0] : v) ?? null;
}
