import { WebSocket } from "ws";
import type { ConnectLookup } from "../../manage/url-policy.js";

/**
 * The `ws` socket options of both sides of a relay. No compression: audio does not compress and
 * frames pass as they came. No UTF-8 check of text frames: the relay passes them on unread (the
 * side receiving them checks, and a 1007 close it sends comes back through the relay), and the few
 * it reads it decodes leniently.
 */
export const RELAY_SOCKET_OPTIONS = { perMessageDeflate: false, skipUTF8Validation: true } as const;

/** How long an upstream WebSocket handshake may take before the attempt counts as failed. */
export const UPSTREAM_CONNECT_TIMEOUT_MS = 10_000;

/** Why an upstream WebSocket could not be opened: its HTTP answer, a timeout, or a network error. */
export class UpstreamConnectError extends Error {
  override name = "UpstreamConnectError";
  constructor(
    readonly kind: "status" | "timeout" | "network",
    message: string,
    /** The upstream's HTTP status when it refused the handshake. */
    readonly status: number | null = null,
    /** Seconds from the upstream's Retry-After, when it sent one. */
    readonly retryAfterSeconds: number | null = null,
  ) {
    super(message);
  }

  /** The underlying error's own text (addresses, ports): for the operator log only. */
  detail: string | null = null;

  /** Worth trying the next fallback: a network error, a timeout, a 429 or a 5xx (the fallback rule of docs/api/gateway.md). */
  get retryable(): boolean {
    return this.kind !== "status" || this.status === 429 || (this.status !== null && this.status >= 500);
  }
}

export interface UpstreamTarget {
  /** ws:// or wss:// URL, query included. */
  url: string;
  /** Headers sent with the handshake (the provider's own key goes here or in the URL). */
  headers: Record<string, string>;
  /** Subprotocols offered upstream (some vendors read the key from one). */
  protocols?: string[];
  timeoutMs?: number;
  /**
   * The connect-time address check (GatewayUpstreams.lookupFor): required, so that no relay opens a
   * socket carrying a provider key to an address the HTTP path would refuse.
   */
  lookup: ConnectLookup;
}

/** Seconds of a Retry-After header (delta-seconds or an HTTP date), bounded; null when absent or junk. */
export function retryAfterSeconds(value: string | string[] | undefined, now = Date.now()): number | null {
  const v = Array.isArray(value) ? value[0] : value;
  if (!v) return null;
  if (/^\d{1,6}$/.test(v.trim())) return Number(v.trim());
  const at = Date.parse(v);
  if (Number.isNaN(at)) return null;
  return Math.max(0, Math.ceil((at - now) / 1000));
}

/**
 * Opens an upstream WebSocket and resolves once it is open, paused (the relay resumes it once it
 * listens, so nothing the vendor sends first is lost); rejects with an UpstreamConnectError.
 */
export function connectUpstream(target: UpstreamTarget): Promise<WebSocket> {
  return new Promise((resolve, reject) => {
    const timeoutMs = target.timeoutMs ?? UPSTREAM_CONNECT_TIMEOUT_MS;
    let settled = false;
    const ws = new WebSocket(target.url, target.protocols ?? [], {
      ...RELAY_SOCKET_OPTIONS,
      headers: target.headers,
      lookup: target.lookup,
      followRedirects: false,
      handshakeTimeout: timeoutMs,
      maxPayload: 64 * 1024 * 1024,
    });
    const fail = (err: UpstreamConnectError) => {
      if (settled) return;
      settled = true;
      ws.removeAllListeners();
      ws.on("error", () => {});
      ws.terminate();
      reject(err);
    };
    ws.once("open", () => {
      if (settled) return;
      settled = true;
      ws.removeAllListeners("unexpected-response");
      // Vendors speak first (OpenAI's session.created): hold their frames until the relay listens.
      ws.pause();
      resolve(ws);
    });
    ws.once("unexpected-response", (_req, res) => {
      const status = res.statusCode ?? 502;
      res.resume();
      fail(new UpstreamConnectError("status", `upstream refused the WebSocket handshake with ${status}`, status, retryAfterSeconds(res.headers["retry-after"])));
    });
    ws.on("error", (err: NodeJS.ErrnoException) => {
      const timeout = /timed out|timeout/i.test(err.message);
      // The message reaches the tenant (its request row, the refusal): the code only, as on the HTTP
      // path; the address and port stay in `detail`, for the operator log.
      const e = new UpstreamConnectError(timeout ? "timeout" : "network", timeout ? `upstream WebSocket handshake timed out after ${timeoutMs} ms` : `upstream not reachable (${err.code ?? "error"})`);
      e.detail = err.message;
      fail(e);
    });
  });
}
