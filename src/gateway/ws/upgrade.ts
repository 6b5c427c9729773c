import type { WebSocketLike } from "@hono/node-server";
import { type WebSocket, WebSocketServer } from "ws";
import { DomainError } from "../../errors.js";
import { errorBody, httpStatus } from "../../http/errors.js";
import { connectUpstream, RELAY_SOCKET_OPTIONS, UpstreamConnectError, type UpstreamTarget } from "./connect.js";

/** Largest client frame the gateway accepts on a relayed WebSocket (a vendor's own limit is lower). */
export const MAX_CLIENT_FRAME_BYTES = 16 * 1024 * 1024;
/** An upgraded client that never completes its handshake releases the upstream after this long. */
export const HANDSHAKE_GRACE_MS = 10_000;

/** The `ws` server the gateway listener completes upgrades on (src/gateway/listener.ts withGatewayListener; created with noServer). */
export function createWebSocketServer(): WebSocketServer {
  return new WebSocketServer({ ...RELAY_SOCKET_OPTIONS, noServer: true, maxPayload: MAX_CLIENT_FRAME_BYTES, handleProtocols: chooseSubprotocol });
}

/**
 * The subprotocol echoed to the client: the first one offered that carries no key. Browser SDKs send
 * their key as a subprotocol (Deepgram `token, <key>`, OpenAI `openai-insecure-api-key.<key>`), and the
 * server's choice is sent back in the handshake: a key must never be the choice.
 */
export function chooseSubprotocol(offered: Set<string>): string | false {
  const list = [...offered];
  for (let i = 0; i < list.length; i++) {
    const p = list[i] ?? "";
    const prev = (list[i - 1] ?? "").toLowerCase();
    if (prev === "token" || prev === "bearer" || p.startsWith("openai-insecure-api-key.")) continue;
    return p;
  }
  return false;
}

/** How long shutdown waits for clients to answer a 1001 close before cutting their sockets. */
export const CLOSE_GRACE_MS = 3_000;

/**
 * Closes every accepted client socket with 1001 (going away) and resolves once all have closed (cut
 * after CLOSE_GRACE_MS): by then each relay has ended its vendor stream and queued its record.
 */
export async function closeClientSockets(server: WebSocketServer, graceMs = CLOSE_GRACE_MS): Promise<void> {
  const open = [...server.clients];
  await Promise.all(
    open.map(
      (client) =>
        new Promise<void>((resolve) => {
          client.once("close", () => resolve());
          const cut = setTimeout(() => client.terminate(), graceMs);
          cut.unref();
          client.close(1001, "server shutting down");
        }),
    ),
  );
}

/**
 * A refusal before the upgrade, for a Hono app on node-server's upgradeWebSocket (the relay's own
 * test; the gateway refuses through its listener): node-server answers a non-101 upgrade as a bare
 * status line with headers and no body, so the envelope's code travels in `X-Voxgate-Error` (and
 * Retry-After for 429).
 * 401/403 auth, 402/429 budget and limits, 404 model, 426 not a WebSocket, 502/504 vendor down.
 */
export function upgradeRefusal(err: DomainError, headers: Record<string, string> = {}): Response {
  const h = new Headers(headers);
  h.set("x-voxgate-error", err.code);
  h.set("content-type", "application/json");
  return new Response(JSON.stringify(errorBody(err.code, err.message)), { status: httpStatus(err), headers: h });
}

/** The DomainError a failed upstream connect becomes: 429 passes on with Retry-After, others are 502/504. */
export function connectFailure(err: UpstreamConnectError): DomainError {
  if (err.kind === "timeout") return new DomainError("upstream_timeout", err.message);
  if (err.status === 429) return new DomainError("too_many_requests", "the provider is rate limiting (429)", { retry_after_seconds: err.retryAfterSeconds });
  return new DomainError("bad_gateway", err.message);
}

/**
 * Holds an open upstream socket between the pre-upgrade connect and the client's accepted socket:
 * if the client's handshake never completes (it went away), the upstream is closed after a grace period.
 */
export function holdUpstream(upstream: WebSocket, onAbandon: () => void = () => {}): { take(): WebSocket } {
  const timer = setTimeout(() => {
    upstream.terminate();
    onAbandon();
  }, HANDSHAKE_GRACE_MS);
  timer.unref();
  return {
    take() {
      clearTimeout(timer);
      return upstream;
    },
  };
}

export interface ConnectOutcome<T> {
  /** The target that opened, with its socket; null when every attempt failed. */
  opened: { target: T; upstream: WebSocket } | null;
  /** Attempts that failed before it, in order (recorded as error rows; the opener becomes a fallback row). */
  failures: Array<{ target: T; error: UpstreamConnectError }>;
}

/**
 * Tries each target in order until one opens (WebSockets fail over only at connect). A refusal that
 * is not worth retrying elsewhere (a 4xx other than 429) stops the walk.
 */
export async function connectFirst<T>(targets: T[], toTarget: (t: T) => UpstreamTarget | Promise<UpstreamTarget>): Promise<ConnectOutcome<T>> {
  const failures: ConnectOutcome<T>["failures"] = [];
  for (const target of targets) {
    try {
      const upstream = await connectUpstream(await toTarget(target));
      return { opened: { target, upstream }, failures };
    } catch (err) {
      if (!(err instanceof UpstreamConnectError)) throw err;
      failures.push({ target, error: err });
      if (!err.retryable) break;
    }
  }
  return { opened: null, failures };
}

export type { WebSocketLike };
