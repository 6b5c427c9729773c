import { createMiddleware } from "hono/factory";
import { DomainError } from "../errors.js";
import type { AppEnv } from "../http/app-env.js";
import { type AuthContext, allows, OPERATOR, type Permission } from "./context.js";
import type { AuthFailures } from "./failures.js";
import { type StaticKey, sha256Hex } from "./static-keys.js";
import { VK_PREFIX, type VirtualKeyVerifier, vkPrefixOf } from "./virtual-keys.js";

/** What key verification reads: the configured static keys, the vk_ verifier, and where refusals are counted. */
export interface KeyGate {
  /** Static keys by SHA-256 digest; empty = auth off. */
  staticKeys: ReadonlyMap<string, StaticKey>;
  virtualKeys: Pick<VirtualKeyVerifier, "verify">;
  authFailures: Pick<AuthFailures, "record">;
}

/** Auth is on as soon as any static key is configured (auth.api_keys, VOXGATE_API_KEY or VOXGATE_INGEST_KEY). */
export function authEnabled(keys: Pick<KeyGate, "staticKeys">): boolean {
  return keys.staticKeys.size > 0;
}

function bearerToken(header: string | undefined): string | null {
  if (!header) return null;
  const m = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(header);
  return m?.[1] ?? null;
}

/**
 * Identifies the caller once per request and sets c.var.auth. With auth off (no static keys)
 * every caller is the operator, but a valid vk_ key still brings its tenant. `null` = bad credential.
 */
export function identify(keys: KeyGate) {
  return createMiddleware<AppEnv>(async (c, next) => {
    c.set("auth", await authenticate(keys, bearerToken(c.req.header("authorization"))));
    await next();
  });
}

/**
 * The one key verifier: a presented token (from whatever header its route reads it) to the caller's
 * AuthContext, or UNAUTHENTICATED. Every credential check in Voxgate goes through here. Answered at
 * once (no promise) unless a vk_ key has to be verified: a static key is known from memory, and the
 * gateway takes the answer without a microtask per call.
 */
export function authenticate(keys: KeyGate, token: string | null): AuthContext | Promise<AuthContext> {
  if (token?.startsWith(VK_PREFIX) === true) return keys.virtualKeys.verify(token).then((auth) => auth ?? refused(keys, token, true));
  const auth = token ? (staticKeyOf(keys.staticKeys, token)?.context ?? null) : null;
  return auth ?? refused(keys, token, false);
}

/**
 * No valid key came. Auth off: everyone is the operator, except that a presented vk_ key must be valid
 * (a revoked or unknown minted key is refused, never silently upgraded to operator).
 */
function refused(keys: KeyGate, token: string | null, virtual: boolean): AuthContext {
  if (!authEnabled(keys) && !virtual) return OPERATOR;
  if (token) keys.authFailures.record(virtual ? "virtual" : "static", virtual ? vkPrefixOf(token) : null);
  return UNAUTHENTICATED;
}

/** Tokens already found among the static keys, per key table: a static key is hashed once per process, not per request. */
const verifiedStatic = new WeakMap<ReadonlyMap<string, StaticKey>, Map<string, StaticKey>>();
/** Bound of that memo (configured keys only ever enter it; unknown tokens are hashed each time). */
const VERIFIED_STATIC_LIMIT = 1024;

function staticKeyOf(keys: ReadonlyMap<string, StaticKey>, token: string): StaticKey | undefined {
  let memo = verifiedStatic.get(keys);
  const hit = memo?.get(token);
  if (hit) return hit;
  const key = keys.get(sha256Hex(token));
  if (key) {
    if (!memo) {
      memo = new Map();
      verifiedStatic.set(keys, memo);
    }
    if (memo.size < VERIFIED_STATIC_LIMIT) memo.set(token, key);
  }
  return key;
}

/** Marker for "auth is on and no valid credential was presented". */
export const UNAUTHENTICATED: AuthContext = { kind: "static", actor: "anonymous", tenantId: null, scopes: [], role: "tenant" };

/** The gate, declared on each router: 401 without a valid key, 403 without the permission. */
export function requireScope(need: Permission) {
  return createMiddleware<AppEnv>(async (c, next) => {
    const auth = c.var.auth;
    if (auth === UNAUTHENTICATED) {
      throw new DomainError("unauthorized", "a valid API key is required: Authorization: Bearer <key>");
    }
    if (!allows(auth, need)) throw new DomainError("forbidden", `this key lacks the ${need} scope`);
    await next();
  });
}
