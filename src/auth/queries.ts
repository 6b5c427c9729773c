import { and, desc, eq, isNull, or } from "drizzle-orm";
import type { Db } from "../db/client.js";
import { apiKeys } from "../db/schema/index.js";
import { type TenantScope, tenantCondition } from "./context.js";

export type ApiKeyRow = typeof apiKeys.$inferSelect;

/** The public shape of a key row: never the hash, never the plaintext. */
export function publicKeyRow(row: ApiKeyRow) {
  return {
    id: row.id,
    name: row.name,
    tenant_id: row.tenantId,
    issued_by: row.issuedBy,
    key_prefix: row.keyPrefix,
    scopes: row.scopes,
    role: row.role,
    created_at: row.createdAt.toISOString(),
    revoked_at: row.revokedAt ? row.revokedAt.toISOString() : null,
  };
}

export async function insertApiKey(db: Db, row: typeof apiKeys.$inferInsert): Promise<ApiKeyRow> {
  const [inserted] = await db.insert(apiKeys).values(row).returning();
  if (!inserted) throw new Error("insert returned no row");
  return inserted;
}

// Key rows are tenant data like any other: a tenant-bound (admin) key lists, reads and revokes only
// its own tenant's keys; another tenant's key answers exactly like a missing one.

export async function listApiKeys(db: Db, scope: TenantScope, opts: { includeRevoked: boolean }): Promise<ApiKeyRow[]> {
  return db
    .select()
    .from(apiKeys)
    .where(and(tenantCondition(apiKeys.tenantId, scope), opts.includeRevoked ? undefined : isNull(apiKeys.revokedAt)))
    .orderBy(desc(apiKeys.createdAt));
}

export async function getApiKeyById(db: Db, scope: TenantScope, id: string): Promise<ApiKeyRow | undefined> {
  const [row] = await db
    .select()
    .from(apiKeys)
    .where(and(eq(apiKeys.id, id), tenantCondition(apiKeys.tenantId, scope)))
    .limit(1);
  return row;
}

/**
 * The rows a presented vk_ token can be, in one round trip: the row of its digest, and a row minted
 * before digests (no digest yet) that has its prefix. Both probes are unique-index lookups.
 */
export async function findKeyRowsForToken(db: Db, digest: string, keyPrefix: string): Promise<ApiKeyRow[]> {
  return db
    .select()
    .from(apiKeys)
    .where(or(eq(apiKeys.keyDigest, digest), and(eq(apiKeys.keyPrefix, keyPrefix), isNull(apiKeys.keyDigest))))
    .limit(2);
}

/** A legacy (bcrypt) row verified once gets its digest; from then on it is found like any other. */
export async function storeKeyDigest(db: Db, id: string, digest: string): Promise<void> {
  await db.update(apiKeys).set({ keyDigest: digest }).where(and(eq(apiKeys.id, id), isNull(apiKeys.keyDigest)));
}

/** Soft revoke: sets revoked_at once (a second revoke keeps the first time). */
export async function revokeApiKey(db: Db, scope: TenantScope, id: string): Promise<ApiKeyRow | undefined> {
  const [row] = await db
    .update(apiKeys)
    .set({ revokedAt: new Date() })
    .where(and(eq(apiKeys.id, id), isNull(apiKeys.revokedAt), tenantCondition(apiKeys.tenantId, scope)))
    .returning();
  return row ?? getApiKeyById(db, scope, id);
}

export async function isRevoked(db: Db, id: string): Promise<boolean> {
  const [row] = await db.select({ revokedAt: apiKeys.revokedAt }).from(apiKeys).where(eq(apiKeys.id, id)).limit(1);
  return !row || row.revokedAt !== null;
}
