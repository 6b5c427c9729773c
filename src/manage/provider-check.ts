import type { Pool } from "undici";
import type { ProviderType } from "../config/schema.js";
import { loadUndici } from "../http/undici.js";
import { bareHost, guardedLookup } from "./url-policy.js";
import { VENDORS } from "./vendors.js";

/** Pools kept open at once; the least recently created is closed beyond this (tests of many hosts). */
export const MAX_UPSTREAM_POOLS = 128;

/** How long a provider test may take, connect to last body byte. */
export const PROVIDER_TEST_TIMEOUT_MS = 10_000;

export interface ProviderTestResult {
  status: "ok" | "failed";
  latency_ms: number;
  message?: string;
  /** Why a test failed (refused, closed, HTTP status, timeout): for the server log, never the answer. */
  detail?: string;
}

/**
 * The one answer for a test that reached the network and failed. Refused, closed, timed out and each
 * HTTP status are told apart in the log only: telling them apart in the answer would let a key with
 * write scope scan the ports of permitted hosts.
 */
export const PROVIDER_TEST_FAILED = "the provider did not answer the test successfully; the server log has the reason";

/**
 * One undici Pool per upstream origin, reused across tests. Redirects are never followed (undici
 * follows none without the redirect interceptor), so a permitted host cannot bounce the key
 * elsewhere; the resolved address is re-checked at connect time (DNS rebinding to 127.0.0.1).
 */
export class UpstreamPools {
  private readonly pools = new Map<string, Pool>();
  constructor(private readonly trustedHosts: ReadonlySet<string>) {}

  async get(origin: string, host: string): Promise<Pool> {
    const { Pool } = await loadUndici();
    let pool = this.pools.get(origin);
    if (!pool) {
      const lookup = guardedLookup(this.trustedHosts.has(host));
      pool = new Pool(origin, { connections: 4, connect: { lookup, timeout: PROVIDER_TEST_TIMEOUT_MS } });
      if (this.pools.size >= MAX_UPSTREAM_POOLS) {
        const [oldestOrigin, oldest] = this.pools.entries().next().value ?? [];
        if (oldestOrigin !== undefined) this.pools.delete(oldestOrigin);
        void oldest?.close().catch(() => {});
      }
      this.pools.set(origin, pool);
    }
    return pool;
  }

  get size(): number {
    return this.pools.size;
  }

  async close(): Promise<void> {
    const all = [...this.pools.values()];
    this.pools.clear();
    await Promise.allSettled(all.map((p) => p.close()));
  }
}

/** An error text with every occurrence of the key blanked out (upstreams sometimes echo it). */
function scrub(text: string, apiKey: string): string {
  let out = text.slice(0, 300);
  if (apiKey.length >= 4) out = out.split(apiKey).join("***");
  return out;
}

/**
 * The health check of the provider tests (POST /v1/providers/test and /v1/providers/{id}/test): one authenticated GET of the vendor's cheapest listing
 * (e.g. {base_url}/models). ok on 2xx; anything else is `failed` with the one neutral message and, for
 * the log, a detail that never holds the key.
 */
export async function testProvider(
  pools: UpstreamPools,
  input: { type: ProviderType; apiKey: string; baseUrl: string | null },
  timeoutMs: number = PROVIDER_TEST_TIMEOUT_MS,
): Promise<ProviderTestResult> {
  const vendor = VENDORS[input.type];
  const base = input.baseUrl ?? vendor.defaultBaseUrl;
  const started = performance.now();
  const elapsed = () => Math.max(0, Math.round(performance.now() - started));
  if (!base) return { status: "failed", latency_ms: 0, message: "provider has no base_url to test" };
  if (!input.apiKey && vendor.location === "cloud") {
    return { status: "failed", latency_ms: 0, message: "provider has no API key" };
  }
  const url = new URL(base);
  const path = `${url.pathname.replace(/\/+$/, "")}${vendor.healthPath}`;
  try {
    const res = await (await pools.get(url.origin, bareHost(url.hostname))).request({
      method: "GET",
      path,
      headers: { accept: "application/json", "user-agent": "voxgate-provider-test", ...vendor.authHeaders(input.apiKey) },
      headersTimeout: timeoutMs,
      bodyTimeout: timeoutMs,
      signal: AbortSignal.timeout(timeoutMs),
    });
    await res.body.dump({ limit: 1 << 20 }).catch(() => {});
    const latency = elapsed();
    if (res.statusCode >= 200 && res.statusCode < 300) return { status: "ok", latency_ms: latency };
    let detail = `provider answered HTTP ${res.statusCode}`;
    if (res.statusCode >= 300 && res.statusCode < 400) detail = `provider answered a redirect (HTTP ${res.statusCode}); redirects are not followed`;
    if (res.statusCode === 401 || res.statusCode === 403) detail = `provider rejected the credential (HTTP ${res.statusCode})`;
    return { status: "failed", latency_ms: latency, message: PROVIDER_TEST_FAILED, detail };
  } catch (err) {
    const e = err as NodeJS.ErrnoException & { name?: string };
    const reason =
      e.name === "TimeoutError" || e.name === "AbortError" || e.code === "UND_ERR_HEADERS_TIMEOUT" || e.code === "UND_ERR_CONNECT_TIMEOUT"
        ? `no answer within ${timeoutMs} ms`
        : `${e.code ?? e.name ?? "error"}: ${e.message}`;
    return { status: "failed", latency_ms: elapsed(), message: PROVIDER_TEST_FAILED, detail: scrub(`request failed: ${reason}`, input.apiKey) };
  }
}
