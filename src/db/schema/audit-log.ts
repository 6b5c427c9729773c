import { sql } from "drizzle-orm";
import { bigserial, index, jsonb, pgTable, text } from "drizzle-orm/pg-core";
import { tstz } from "./columns.js";

/** Every create/update/delete of managed entities, written in the same transaction as the change. */
export const auditLog = pgTable(
  "audit_log",
  {
    id: bigserial({ mode: "number" }).primaryKey(),
    ts: tstz().notNull().default(sql`now()`),
    /** The key id that made the change, or "operator" when auth is off. */
    actor: text().notNull(),
    tenantId: text(),
    entityType: text().notNull(),
    entityId: text().notNull(),
    action: text().notNull(),
    before: jsonb(),
    after: jsonb(),
  },
  (t) => [index("audit_log_ts_idx").on(t.ts), index("audit_log_entity_idx").on(t.entityType, t.entityId)],
);
