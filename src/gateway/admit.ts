import type { IncomingHttpHeaders } from "node:http";
import { type AuthContext, allows } from "../auth/context.js";
import { authOffRefusal } from "../auth/browser-guard.js";
import { UNAUTHENTICATED } from "../auth/gate.js";
import type { Modality } from "../config/schema.js";
import { type Attribution, attributionOf } from "./attribution.js";
import { type CallContext, type CallerTrace, recordAttempt } from "./attempt.js";
import type { Gateway } from "./gateway.js";
import { isLoopback } from "./loopback.js";
import { type Hold, NO_HOLD } from "./budget-reservations.js";
import { type GatewayErrorCode, headerValue, type Units, type UpstreamTarget, type VendorProtocol } from "./protocol.js";
import { fallbackChain, resolveModel, STACK_PREFIX } from "./resolve.js";

/** A refusal before any upstream is tried, answered in the vendor's error shape. */
export interface Refusal {
  ok: false;
  status: number;
  code: GatewayErrorCode;
  message: string;
  details?: unknown;
}

const refuse = (status: number, code: GatewayErrorCode, message: string, details?: unknown): Refusal => ({ ok: false, status, code, message, details });

export interface Caller {
  ok: true;
  auth: AuthContext;
  attribution: Attribution;
}

/**
 * Stage 1 of every gateway call, HTTP or WebSocket upgrade: the loopback rule when auth is off, the
 * caller's key (wherever the vendor's SDK put it) with a scope allowing inference, and attribution.
 */
export async function admitCaller(
  gw: Gateway,
  protocol: VendorProtocol,
  req: { headers: IncomingHttpHeaders; query: URLSearchParams; params: Readonly<Record<string, string>>; remoteAddress: string | null },
): Promise<Caller | Refusal> {
  const refused = loopbackRefusal(gw, req.remoteAddress, req.headers);
  if (refused) return refused;
  return admitKey(await gw.authenticate(protocol.credential(req.headers, req.query)), req);
}

/**
 * Stage 1's first rule: with auth off, loopback clients only, and never a request a web page could
 * have sent (src/auth/browser-guard.ts). Null when the caller may go on.
 */
export function loopbackRefusal(gw: Gateway, remoteAddress: string | null, headers: IncomingHttpHeaders): Refusal | null {
  if (gw.authEnabled) return null;
  if (!isLoopback(remoteAddress)) {
    return refuse(403, "loopback_only", "authentication is off: the gateway answers loopback clients only (configure auth.api_keys or VOXGATE_API_KEY)");
  }
  const browser = authOffRefusal((name) => headerValue(headers, name), "", gw.config.serve.allowed_hosts);
  return browser ? refuse(403, "forbidden", browser) : null;
}

/**
 * Stage 1's rest, once the key is verified: a scope allowing inference, and attribution. Apart from
 * admitCaller so that the HTTP pipeline awaits the key check itself (one tick fewer per call).
 */
export function admitKey(auth: AuthContext, req: { headers: IncomingHttpHeaders; params: Readonly<Record<string, string>> }): Caller | Refusal {
  if (auth === UNAUTHENTICATED) return refuse(401, "unauthorized", "a valid Voxgate API key is required");
  if (!allows(auth, "infer")) return refuse(403, "forbidden", "this key lacks a scope that allows inference (infer or *)");
  const attribution = attributionOf(req.params, req.headers);
  if (!attribution.ok) return refuse(400, "invalid_request", attribution.message);
  return { ok: true, auth, attribution: attribution.value };
}

export interface CallPlan {
  ok: true;
  ctx: CallContext;
  /** The primary target, then the fallbacks this route can speak. */
  chain: UpstreamTarget[];
  /** Headers every answer of this call carries (the budget warning). */
  extraHeaders: Record<string, string>;
  /** The spend this call holds against a `block` budget; released once its record is queued. */
  hold: Hold;
}

/**
 * Stage 2, once the model the caller named is known: the project's budget (block refuses with 402
 * budget_exceeded and records the refusal; warn adds a header and a log line; throttle switches to the
 * project's throttle_stack), model resolution and the fallback chain. With an `estimate`, a `block`
 * project also holds the estimate's cost on the primary model (refused 402 when the budget has no room
 * left for it); without one (streams reserve per increment) nothing is held here.
 */
export function planCall(
  gw: Gateway,
  protocol: VendorProtocol,
  modality: Modality,
  caller: Caller,
  model: string | null,
  clock: { startedAt: number; t0: number; requestId: string; trace: CallerTrace | null },
  estimate: Units | null = null,
  vendorDefault?: string,
): CallPlan | Refusal {
  const table = gw.table;
  const { attribution } = caller;
  const project = table.projects.get(attribution.project);
  // An owned project takes calls from its tenant's keys and operator keys only (refused before any vendor).
  if (project?.tenantId != null && caller.auth.tenantId !== null && caller.auth.tenantId !== project.tenantId) {
    return refuse(403, "forbidden", `project ${attribution.project} belongs to another tenant`);
  }
  const budget = gw.budgets.decide(project);
  const speaks = { modality, providerTypes: protocol.providerTypes };
  const throttled = budget === "throttle" && project?.throttleStack ? project.throttleStack : null;
  const resolution = resolveModel(table, speaks, throttled ? `${STACK_PREFIX}${throttled}` : model, project?.defaultStack ?? null, vendorDefault);
  if (!resolution.ok) {
    return refuse(404, "model_not_found", `${resolution.reason}; routable models: ${resolution.routable.join(", ") || "(none)"}`, { routable: resolution.routable });
  }
  const ctx: CallContext = {
    gw,
    route: { modality },
    tenantId: caller.auth.tenantId,
    attribution,
    startedAt: clock.startedAt,
    t0: clock.t0,
    throttledFrom: throttled ? model : null,
    trace: clock.trace,
  };
  const hold = budget === "block" ? null : estimate === null ? NO_HOLD : gw.reservations.reserve(project, resolution.target, estimate, caller.auth.tenantId);
  if (hold === null) {
    recordAttempt(ctx, { id: clock.requestId, target: resolution.target, status: "error", error: "budget_exceeded: the project's daily budget is spent (budget_action block)", units: {} });
    return refuse(402, "budget_exceeded", `project ${attribution.project} has reached its daily budget`);
  }
  const extraHeaders: Record<string, string> = {};
  if (budget === "warn") {
    extraHeaders["x-voxgate-budget-warning"] = `project ${attribution.project} is over its daily budget`;
    gw.log.warn({ project: attribution.project, spend: gw.budgets.spend(attribution.project) }, "project over its daily budget (budget_action warn): served");
  }
  return { ok: true, ctx, chain: [resolution.target, ...fallbackChain(table, speaks, resolution.target)], extraHeaders, hold };
}
