import { sql } from "drizzle-orm";
import { pgTable, text } from "drizzle-orm/pg-core";
import { tstz } from "./columns.js";

/**
 * Minted virtual keys (vk_…). A key is found by the SHA-256 of the whole token (key_digest, unique):
 * keys carry ~190 random bits, so the digest is as strong as a slow hash for them and a wrong token
 * costs one hash and one index probe. key_hash is the bcrypt hash of rows minted before digests;
 * such a row gets its digest on its first successful verification. key_prefix is public.
 */
export const apiKeys = pgTable("api_keys", {
  id: text().primaryKey(),
  name: text().notNull(),
  tenantId: text(),
  issuedBy: text(),
  keyPrefix: text().notNull().unique(),
  keyDigest: text().unique(),
  keyHash: text(),
  scopes: text().array().notNull(),
  role: text().notNull().default("tenant"),
  createdAt: tstz().notNull().default(sql`now()`),
  revokedAt: tstz(),
});
