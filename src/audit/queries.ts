import { and, desc, eq } from "drizzle-orm";
import { type TenantScope, tenantCondition } from "../auth/context.js";
import type { Db } from "../db/client.js";
import { auditLog } from "../db/schema/index.js";
import type { AuditAction, AuditEntityType } from "./record.js";

export const AUDIT_LIMIT_MIN = 1;
export const AUDIT_LIMIT_MAX = 500;
export const AUDIT_LIMIT_DEFAULT = 50;

export interface AuditFilter extends TenantScope {
  limit: number;
  entityType?: AuditEntityType;
  entityId?: string;
  action?: AuditAction;
}

/** Newest first (id breaks ties within one timestamp); every filter reaches SQL as a parameter. */
export async function listAuditEntries(db: Db, f: AuditFilter) {
  const rows = await db
    .select()
    .from(auditLog)
    .where(
      and(
        tenantCondition(auditLog.tenantId, f),
        f.entityType ? eq(auditLog.entityType, f.entityType) : undefined,
        f.entityId !== undefined ? eq(auditLog.entityId, f.entityId) : undefined,
        f.action ? eq(auditLog.action, f.action) : undefined,
      ),
    )
    .orderBy(desc(auditLog.ts), desc(auditLog.id))
    .limit(f.limit);
  return rows.map((r) => ({
    id: r.id,
    ts: r.ts.toISOString(),
    actor: r.actor,
    tenant_id: r.tenantId,
    entity_type: r.entityType,
    entity_id: r.entityId,
    action: r.action,
    before: r.before,
    after: r.after,
  }));
}
