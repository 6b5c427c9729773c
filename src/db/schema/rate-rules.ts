import { sql } from "drizzle-orm";
import { pgTable, text } from "drizzle-orm/pg-core";
import { money, tstz } from "./columns.js";

/** Database override rules of the rate card; one per scope key tenant|plan|modality|provider|model. */
export const rateRules = pgTable("rate_rules", {
  ruleId: text().primaryKey(),
  scopeKey: text().notNull().unique(),
  tenant: text(),
  plan: text(),
  modality: text(),
  provider: text(),
  model: text(),
  /** price (what the tenant pays) or cost (what the operator pays). */
  sets: text().notNull().default("price"),
  markup: money(),
  fixed: money(),
  unit: text(),
  inputPriceUsd: money(),
  outputPriceUsd: money(),
  cachedInputPriceUsd: money(),
  createdAt: tstz().notNull().default(sql`now()`),
  updatedAt: tstz().notNull().default(sql`now()`),
});
