import { sql } from "drizzle-orm";
import { pgTable, text } from "drizzle-orm/pg-core";
import { tstz } from "./columns.js";

/** Models created through the API (source db). */
export const models = pgTable("models", {
  modelId: text().primaryKey(),
  modality: text().notNull(),
  providerId: text().notNull(),
  modelName: text().notNull(),
  displayName: text(),
  defaultLanguage: text(),
  createdAt: tstz().notNull().default(sql`now()`),
});
