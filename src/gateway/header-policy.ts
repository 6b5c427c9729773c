import type { IncomingHttpHeaders } from "node:http";

/**
 * What crosses the gateway in headers, per vendor protocol, on allowlists (docs/auth.md, "Gateway
 * threat model"). Request: the caller's headers reach a vendor only when the vendor's protocol defines
 * them; the provider's own auth is set by the protocol. Response: the vendor's headers reach the caller
 * only when they describe the answer (type, request ids, rate limits, Retry-After). Everything else
 * (hop-by-hop headers, Expect, User-Agent, X-Forwarded-For, OpenAI-Organization/Project, cookies, the
 * vendor's account or organisation ids) is dropped in both directions.
 */

/** Caller headers forwarded to every vendor. */
const COMMON_REQUEST = ["content-type", "accept"];

/** Caller headers each vendor's own protocol defines (keyed by protocol id; unknown ids get COMMON_REQUEST). */
export const VENDOR_REQUEST_HEADERS: Readonly<Record<string, readonly string[]>> = {
  openai: [...COMMON_REQUEST, "openai-beta"],
  anthropic: [...COMMON_REQUEST, "anthropic-version", "anthropic-beta"],
  deepgram: COMMON_REQUEST,
  elevenlabs: COMMON_REQUEST,
  cartesia: [...COMMON_REQUEST, "cartesia-version"],
};

/** Never sent upstream, whatever a protocol sets: the connection's own headers and Expect (undici refuses it). */
const NEVER_UPSTREAM = new Set(["host", "connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade", "te", "trailer", "expect", "content-length"]);

const requestSets = new Map<string, ReadonlySet<string>>();
function requestAllowed(protocolId: string): ReadonlySet<string> {
  let set = requestSets.get(protocolId);
  if (!set) {
    set = new Set(VENDOR_REQUEST_HEADERS[protocolId] ?? COMMON_REQUEST);
    requestSets.set(protocolId, set);
  }
  return set;
}

/**
 * The headers an upstream request (HTTP or WebSocket handshake) carries: of those a protocol built,
 * the ones the vendor's allowlist names plus the provider's auth headers (`auth`, set by the protocol
 * itself); never a hop-by-hop header or Expect. Returns `built` itself when nothing is dropped.
 */
export function upstreamHeaders(protocolId: string, built: Record<string, string>, auth: Readonly<Record<string, string>>): Record<string, string> {
  const allowed = requestAllowed(protocolId);
  let out: Record<string, string> | null = null;
  for (const name in built) {
    const lower = name.toLowerCase();
    const keep = !NEVER_UPSTREAM.has(lower) && (allowed.has(lower) || Object.hasOwn(auth, name));
    if (keep) {
      if (out) out[name] = built[name] as string;
      continue;
    }
    if (!out) {
      out = {};
      for (const n in built) {
        if (n === name) break;
        out[n] = built[n] as string;
      }
    }
  }
  return out ?? built;
}

/** Vendor answer headers relayed to every caller. */
const COMMON_RESPONSE = ["content-type", "content-length", "content-encoding", "content-language", "content-disposition", "cache-control", "retry-after", "x-request-id", "request-id"];

/** Answer headers each vendor documents (request ids, processing time, usage); name prefixes end in "-". */
export const VENDOR_RESPONSE_HEADERS: Readonly<Record<string, readonly string[]>> = {
  openai: [...COMMON_RESPONSE, "openai-processing-ms", "openai-version", "x-ratelimit-"],
  anthropic: [...COMMON_RESPONSE, "anthropic-ratelimit-", "x-should-retry"],
  deepgram: [...COMMON_RESPONSE, "dg-request-id", "dg-model-name", "dg-model-uuid", "dg-char-count", "dg-error"],
  elevenlabs: [...COMMON_RESPONSE, "history-item-id", "character-cost", "x-character-count", "current-concurrent-requests", "maximum-concurrent-requests"],
  cartesia: [...COMMON_RESPONSE, "cartesia-version"],
};

interface ResponsePolicy {
  names: ReadonlySet<string>;
  prefixes: readonly string[];
}
const responsePolicies = new Map<string, ResponsePolicy>();
function responsePolicy(protocolId: string): ResponsePolicy {
  let p = responsePolicies.get(protocolId);
  if (!p) {
    const list = VENDOR_RESPONSE_HEADERS[protocolId] ?? COMMON_RESPONSE;
    p = { names: new Set(list.filter((n) => !n.endsWith("-"))), prefixes: list.filter((n) => n.endsWith("-")) };
    responsePolicies.set(protocolId, p);
  }
  return p;
}

/** The vendor answer's headers a caller may see (node's lower-cased names); a new object. */
export function relayableHeaders(protocolId: string, upstream: IncomingHttpHeaders): IncomingHttpHeaders {
  const { names, prefixes } = responsePolicy(protocolId);
  const out: IncomingHttpHeaders = {};
  for (const name in upstream) {
    if (names.has(name) || startsWithAny(name, prefixes)) out[name] = upstream[name];
  }
  return out;
}

/** `prefixes.some((p) => name.startsWith(p))` without a closure per header of every answer. */
function startsWithAny(name: string, prefixes: readonly string[]): boolean {
  for (let i = 0; i < prefixes.length; i++) if (name.startsWith(prefixes[i] as string)) return true;
  return false;
}

/** Keys shorter than this are not searched for in answers (too likely to occur by chance). */
const MIN_SEARCHED_KEY_LENGTH = 8;

/** Keys as searched for: every answer of a provider searches for the same key (at most 256 kept). */
const keyBytes = new Map<string, Buffer>();

/** The provider's key as searched for in answers; null when it is empty or too short to search. */
export function searchableKey(apiKey: string): Buffer | null {
  if (apiKey.length < MIN_SEARCHED_KEY_LENGTH) return null;
  let bytes = keyBytes.get(apiKey);
  if (!bytes) {
    bytes = Buffer.from(apiKey);
    if (keyBytes.size >= 256) keyBytes.clear();
    keyBytes.set(apiKey, bytes);
  }
  return bytes;
}

/** True when any header value holds the provider's key (`apiKey` as searchableKey accepts it). */
export function headersHoldKey(headers: IncomingHttpHeaders, apiKey: string): boolean {
  if (apiKey.length < MIN_SEARCHED_KEY_LENGTH) return false;
  for (const name in headers) {
    const v = headers[name];
    if (v === undefined) continue;
    if (Array.isArray(v) ? v.some((x) => x.includes(apiKey)) : v.includes(apiKey)) return true;
  }
  return false;
}

/**
 * Finds the provider's key in a body passing chunk by chunk, across chunk boundaries: push() returns
 * true once the key has been seen. Keeps only the last key-length − 1 bytes between chunks.
 */
export class KeyWatch {
  private tail: Buffer = Buffer.alloc(0);
  constructor(private readonly key: Buffer) {}

  push(chunk: Buffer): boolean {
    if (chunk.indexOf(this.key) >= 0) return true;
    const keep = this.key.length - 1;
    if (this.tail.length > 0) {
      const seam = Buffer.concat([this.tail, chunk.subarray(0, keep)]);
      if (seam.indexOf(this.key) >= 0) return true;
    }
    this.tail = chunk.length >= keep ? chunk.subarray(chunk.length - keep) : Buffer.concat([this.tail, chunk]).subarray(-keep);
    return false;
  }
}
