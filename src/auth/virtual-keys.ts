import { randomBytes, randomUUID } from "node:crypto";
import type { Db } from "../db/client.js";
import type { AuthContext, KeyScope, TenantScope } from "./context.js";
import { LegacyKeyGate } from "./legacy-keys.js";
import { type ApiKeyRow, findKeyRowsForToken, insertApiKey, isRevoked, revokeApiKey, storeKeyDigest } from "./queries.js";
import { sha256Hex } from "./static-keys.js";

const BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
export const VK_PREFIX = "vk_";
/** vk_ + 12 chars is the lookup prefix stored in clear; the remaining 32 chars are the secret. */
export const VK_PREFIX_LENGTH = VK_PREFIX.length + 12;
const VK_LENGTH = VK_PREFIX.length + 44;

/** The public prefix of a well-formed vk_ token (safe to log: /v1/api-keys shows it), else null. */
export function vkPrefixOf(token: string): string | null {
  return token.length === VK_LENGTH && /^vk_[0-9A-Za-z]+$/.test(token) ? token.slice(0, VK_PREFIX_LENGTH) : null;
}

/** Random base62 without modulo bias (rejection sampling over random bytes). */
export function randomBase62(length: number): string {
  let out = "";
  while (out.length < length) {
    for (const b of randomBytes(length * 2)) {
      if (b < 248 && out.length < length) out += BASE62[b % 62];
    }
  }
  return out;
}

export interface MintInput {
  name: string;
  tenantId: string | null;
  issuedBy: string | null;
  scopes: KeyScope[];
  role: "tenant" | "admin";
}

/**
 * A minted key is stored as the SHA-256 of the whole token. Its 32 secret base62 characters are
 * ~190 random bits: no dictionary, no brute force, so a slow hash adds nothing but a cost every wrong
 * token could make the server pay.
 */
export async function mintVirtualKey(db: Db, input: MintInput): Promise<{ plaintext: string; row: ApiKeyRow }> {
  const plaintext = `${VK_PREFIX}${randomBase62(44)}`;
  const row = await insertApiKey(db, {
    id: `key_${randomUUID().replaceAll("-", "")}`,
    name: input.name,
    tenantId: input.tenantId,
    issuedBy: input.issuedBy,
    keyPrefix: plaintext.slice(0, VK_PREFIX_LENGTH),
    keyDigest: sha256Hex(plaintext),
    scopes: input.scopes,
    role: input.role,
  });
  return { plaintext, row };
}

interface CacheEntry {
  context: AuthContext;
  keyId: string;
  checkedAt: number;
  recheck?: Promise<boolean>;
}

/** How long a verified key is trusted before its revoked_at is read again. */
export const REVOCATION_RECHECK_MS = 1000;
const NEGATIVE_TTL_MS = 60_000;
const MAX_CACHE_ENTRIES = 10_000;

/**
 * Verifies vk_ keys. A token is looked up by its SHA-256 (one hash, one index probe, whether right or
 * wrong); a verified key is then kept in memory by that digest and only its revocation is re-read, at
 * most once a second. A revoke on this replica evicts at once; other replicas see it within
 * REVOCATION_RECHECK_MS. Rows minted before digests are verified by bcrypt once (LegacyKeyGate).
 */
export class VirtualKeyVerifier {
  private readonly valid = new Map<string, CacheEntry>();
  /** Prefix → digest of the verified keys above: a token with such a prefix and another digest is wrong. */
  private readonly validPrefixes = new Map<string, string>();
  private readonly invalid = new Map<string, number>();
  readonly legacy: LegacyKeyGate;

  constructor(
    private readonly db: Db,
    private readonly now: () => number = Date.now,
  ) {
    this.legacy = new LegacyKeyGate(now);
  }

  async verify(key: string): Promise<AuthContext | null> {
    if (!key.startsWith(VK_PREFIX) || key.length !== VK_LENGTH) return null;
    const digest = sha256Hex(key);
    const t = this.now();
    const cached = this.valid.get(digest);
    if (cached) {
      if (t - cached.checkedAt < REVOCATION_RECHECK_MS) return cached.context;
      cached.recheck ??= isRevoked(this.db, cached.keyId).finally(() => {
        cached.recheck = undefined;
      });
      const revoked = await cached.recheck;
      if (revoked) {
        this.forget(digest);
        return null;
      }
      cached.checkedAt = this.now();
      return cached.context;
    }
    const deniedAt = this.invalid.get(digest);
    if (deniedAt !== undefined && t - deniedAt < NEGATIVE_TTL_MS) return null;
    const prefix = key.slice(0, VK_PREFIX_LENGTH);
    // Prefixes are unique: the one key with this prefix is known and this is not it (a forged
    // token for a known prefix costs one hash, not even a query).
    const known = this.validPrefixes.get(prefix);
    if (known !== undefined && known !== digest) return null;
    // A legacy (bcrypt) prefix that failed a moment ago: refused unchecked, without a query either.
    if (this.legacy.throttled(prefix)) return null;

    const rows = await findKeyRowsForToken(this.db, digest, prefix);
    let row = rows.find((r) => r.keyDigest === digest);
    const legacy = rows.find((r) => r.keyDigest === null && r.keyHash !== null && r.revokedAt === null);
    if (!row && legacy?.keyHash) {
      const check = await this.legacy.check(key, prefix, legacy.keyHash);
      // Throttled means unchecked: never remembered as invalid (it may be the right key).
      if (check === "throttled") return null;
      if (check === "ok") {
        await storeKeyDigest(this.db, legacy.id, digest);
        row = legacy;
      }
    }
    if (!row || row.revokedAt !== null) {
      this.remember(this.invalid, digest, t);
      return null;
    }
    const context = contextForRow(row);
    this.remember(this.valid, digest, { context, keyId: row.id, checkedAt: t });
    this.remember(this.validPrefixes, prefix, digest);
    return context;
  }

  /** Forget a revoked key at once on this replica. */
  evictKeyId(keyId: string): void {
    for (const [digest, entry] of this.valid) if (entry.keyId === keyId) this.forget(digest);
  }

  private forget(digest: string): void {
    this.valid.delete(digest);
    for (const [prefix, d] of this.validPrefixes) if (d === digest) this.validPrefixes.delete(prefix);
  }

  private remember<V>(map: Map<string, V>, digest: string, value: V): void {
    if (map.size >= MAX_CACHE_ENTRIES) map.clear();
    map.set(digest, value);
  }
}

export function contextForRow(row: ApiKeyRow): AuthContext {
  return {
    kind: "virtual",
    actor: row.id,
    tenantId: row.tenantId,
    scopes: row.scopes as KeyScope[],
    role: row.role === "admin" ? "admin" : "tenant",
  };
}

export async function revokeVirtualKey(db: Db, verifier: VirtualKeyVerifier | null, scope: TenantScope, id: string) {
  const row = await revokeApiKey(db, scope, id);
  if (row) verifier?.evictKeyId(row.id);
  return row;
}
