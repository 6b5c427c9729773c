import type { Db } from "../db/client.js";
import { auditLog } from "../db/schema/index.js";
import type { AuthContext } from "../auth/context.js";

export type AuditEntityType = "provider" | "model" | "project" | "rate_rule" | "api_key";
export type AuditAction = "create" | "update" | "delete";

/**
 * Records one change. Call it with the transaction that makes the change, so the audit row
 * and the change commit (or fail) together. `before`/`after` must already have secrets masked.
 */
export async function recordAudit(
  tx: Db,
  auth: AuthContext,
  entry: { entityType: AuditEntityType; entityId: string; action: AuditAction; before?: unknown; after?: unknown },
): Promise<void> {
  await tx.insert(auditLog).values({
    actor: auth.actor,
    tenantId: auth.tenantId,
    entityType: entry.entityType,
    entityId: entry.entityId,
    action: entry.action,
    before: entry.before ?? null,
    after: entry.after ?? null,
  });
}
