import { sql } from "drizzle-orm";
import { pgTable, text } from "drizzle-orm/pg-core";
import { tstz } from "./columns.js";

/** Minted virtual keys (vk_…). Only the bcrypt hash is kept; key_prefix finds the row. */
export const apiKeys = pgTable("api_keys", {
  id: text().primaryKey(),
  name: text().notNull(),
  tenantId: text(),
  issuedBy: text(),
  keyPrefix: text().notNull().unique(),
  keyHash: text().notNull(),
  scopes: text().array().notNull(),
  role: text().notNull().default("tenant"),
  createdAt: tstz().notNull().default(sql`now()`),
  revokedAt: tstz(),
});
