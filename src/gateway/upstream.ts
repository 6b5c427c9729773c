import { type LookupAddress, lookup as dnsLookup } from "node:dns";
import { type Dispatcher, Pool } from "undici";
import { bareHost, isBlockedAddress, isMetadataAddress } from "../manage/url-policy.js";
import type { UpstreamRequest, UpstreamTarget } from "./protocol.js";

/** Keep-alive connections per provider origin (calls beyond it queue in the pool). */
export const UPSTREAM_CONNECTIONS = 256;
/** Longest pause between two body chunks of an upstream answer before it counts as dropped. */
export const UPSTREAM_BODY_TIMEOUT_MS = 300_000;

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/**
 * One undici Pool per provider origin with keep-alive, shared by every call: no connection set-up on
 * the hot path. Redirects are never followed. The resolved address is checked at connect time:
 * metadata addresses are refused always, internal ones unless the host is trusted (a yaml provider or
 * serve.provider_base_url_hosts), as for provider tests.
 */
export class GatewayUpstreams {
  private readonly pools = new Map<string, { pool: Pool; basePath: string }>();
  constructor(private readonly trustedHosts: ReadonlySet<string>) {}

  private poolFor(baseUrl: string): { pool: Pool; basePath: string } {
    let entry = this.pools.get(baseUrl);
    if (!entry) {
      const url = new URL(baseUrl);
      const trusted = this.trustedHosts.has(bareHost(url.hostname));
      const lookup = (hostname: string, options: object, callback: LookupCallback) => {
        dnsLookup(hostname, { ...options }, (err, address, family) => {
          if (err) return callback(err, address as string, family);
          const list = Array.isArray(address) ? address : [{ address, family }];
          if (list.some((a) => isMetadataAddress(a.address)) || (!trusted && list.some((a) => isBlockedAddress(a.address)))) {
            const e: NodeJS.ErrnoException = new Error(`${hostname} resolves to a blocked address`);
            e.code = "EBLOCKEDADDRESS";
            return callback(e, address as string, family);
          }
          callback(null, address as string, family);
        });
      };
      const pool = new Pool(url.origin, {
        connections: UPSTREAM_CONNECTIONS,
        keepAliveTimeout: 30_000,
        keepAliveMaxTimeout: 600_000,
        connect: { lookup, timeout: 10_000 },
      });
      entry = { pool, basePath: url.pathname.replace(/\/+$/, "") };
      this.pools.set(baseUrl, entry);
    }
    return entry;
  }

  /**
   * Sends one attempt. Rejects on a connect error or when no response headers came within
   * `firstByteTimeoutMs` (the fallback conditions); the body streams as it arrives.
   */
  send(target: UpstreamTarget, req: UpstreamRequest, signal: AbortSignal, firstByteTimeoutMs: number): Promise<Dispatcher.ResponseData> {
    const { pool, basePath } = this.poolFor(target.baseUrl);
    return pool.request({
      method: req.method as Dispatcher.HttpMethod,
      path: basePath + req.path,
      headers: req.headers,
      body: req.body,
      signal,
      headersTimeout: firstByteTimeoutMs,
      bodyTimeout: UPSTREAM_BODY_TIMEOUT_MS,
    });
  }

  async close(): Promise<void> {
    const all = [...this.pools.values()];
    this.pools.clear();
    await Promise.allSettled(all.map((p) => p.pool.close()));
  }
}
