import { sql } from "drizzle-orm";
import { pgTable, text } from "drizzle-orm/pg-core";
import { tstz } from "./columns.js";

/** Providers created through the API (source db); the key is stored encrypted only. */
export const providers = pgTable("providers", {
  providerId: text().primaryKey(),
  providerType: text().notNull(),
  apiKeyEncrypted: text(),
  apiKeyMasked: text(),
  baseUrl: text(),
  createdAt: tstz().notNull().default(sql`now()`),
  updatedAt: tstz().notNull().default(sql`now()`),
});
