import { randomBytes, randomUUID } from "node:crypto";
import bcrypt from "bcryptjs";
import type { Db } from "../db/client.js";
import type { AuthContext, KeyScope, TenantScope } from "./context.js";
import { type ApiKeyRow, getApiKeyByPrefix, insertApiKey, isRevoked, revokeApiKey } from "./queries.js";
import { sha256Hex } from "./static-keys.js";

const BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
export const VK_PREFIX = "vk_";
/** vk_ + 12 chars is the lookup prefix stored in clear; the remaining 32 chars are the secret. */
const PREFIX_LENGTH = VK_PREFIX.length + 12;
const BCRYPT_COST = 10;

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

export async function mintVirtualKey(db: Db, input: MintInput): Promise<{ plaintext: string; row: ApiKeyRow }> {
  const plaintext = `${VK_PREFIX}${randomBase62(44)}`;
  const row = await insertApiKey(db, {
    id: `key_${randomUUID().replaceAll("-", "")}`,
    name: input.name,
    tenantId: input.tenantId,
    issuedBy: input.issuedBy,
    keyPrefix: plaintext.slice(0, PREFIX_LENGTH),
    keyHash: await bcrypt.hash(plaintext, BCRYPT_COST),
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

/** How long a verified key is trusted before its revoked_at is read again (no bcrypt on re-check). */
export const REVOCATION_RECHECK_MS = 1000;
const NEGATIVE_TTL_MS = 60_000;
const MAX_CACHE_ENTRIES = 10_000;

/**
 * Verifies vk_ keys. bcrypt runs once per key per process; afterwards the key is found by its
 * SHA-256 in memory and only its revocation is re-read, at most once a second. A revoke on this
 * replica evicts at once; other replicas see it within REVOCATION_RECHECK_MS.
 */
export class VirtualKeyVerifier {
  private readonly valid = new Map<string, CacheEntry>();
  private readonly invalid = new Map<string, number>();

  constructor(
    private readonly db: Db,
    private readonly now: () => number = Date.now,
  ) {}

  async verify(key: string): Promise<AuthContext | null> {
    if (!key.startsWith(VK_PREFIX) || key.length !== VK_PREFIX.length + 44) return null;
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
        this.valid.delete(digest);
        return null;
      }
      cached.checkedAt = this.now();
      return cached.context;
    }
    const deniedAt = this.invalid.get(digest);
    if (deniedAt !== undefined && t - deniedAt < NEGATIVE_TTL_MS) return null;

    const row = await getApiKeyByPrefix(this.db, key.slice(0, PREFIX_LENGTH));
    const ok = row !== undefined && row.revokedAt === null && (await bcrypt.compare(key, row.keyHash));
    if (!ok || !row) {
      // Only unknown keys are negatively cached; a revoked key stays refused by its row anyway.
      this.remember(this.invalid, digest, t);
      return null;
    }
    const context = contextForRow(row);
    this.remember(this.valid, digest, { context, keyId: row.id, checkedAt: t });
    return context;
  }

  /** Forget a revoked key at once on this replica. */
  evictKeyId(keyId: string): void {
    for (const [digest, entry] of this.valid) if (entry.keyId === keyId) this.valid.delete(digest);
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
