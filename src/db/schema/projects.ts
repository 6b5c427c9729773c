import { sql } from "drizzle-orm";
import { numeric, pgTable, text } from "drizzle-orm/pg-core";
import { tstz } from "./columns.js";

/** Projects created through the API (source db). */
export const projects = pgTable("projects", {
  projectId: text().primaryKey(),
  name: text().notNull(),
  description: text(),
  dailyBudget: numeric({ precision: 20, scale: 10 }),
  budgetAction: text().notNull().default("warn"),
  defaultStack: text(),
  tags: text().array().notNull().default(sql`'{}'::text[]`),
  accent: text(),
  /** The tenant that owns the project (null: shared); only its keys and operator keys may attribute calls to it. */
  tenantId: text(),
  createdAt: tstz().notNull().default(sql`now()`),
  updatedAt: tstz().notNull().default(sql`now()`),
});
