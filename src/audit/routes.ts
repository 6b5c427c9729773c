import { Hono } from "hono";
import { z } from "zod";
import { requireScope } from "../auth/gate.js";
import { parseOrThrow } from "../http/errors.js";
import type { AppEnv } from "../http/app-env.js";
import { AUDIT_LIMIT_DEFAULT, AUDIT_LIMIT_MAX, AUDIT_LIMIT_MIN, listAuditEntries } from "./queries.js";

const AUDIT_ENTITY_TYPES = ["provider", "model", "project", "rate_rule", "api_key"] as const;
const AUDIT_ACTIONS = ["create", "update", "delete"] as const;

const auditQuery = z.strictObject({
  limit: z
    .string()
    .regex(/^\d+$/, `limit must be an integer from ${AUDIT_LIMIT_MIN} to ${AUDIT_LIMIT_MAX}`)
    .transform(Number)
    .pipe(z.number().int().min(AUDIT_LIMIT_MIN).max(AUDIT_LIMIT_MAX))
    .default(AUDIT_LIMIT_DEFAULT),
  entity_type: z.enum(AUDIT_ENTITY_TYPES).optional(),
  entity_id: z.string().min(1).max(400).optional(),
  action: z.enum(AUDIT_ACTIONS).optional(),
});

/**
 * Endpoint 32: GET /v1/audit-log, read scope. An untenanted key sees every entry; a tenant-bound
 * key sees only entries its own tenant's keys made.
 */
export function auditRoutes() {
  const r = new Hono<AppEnv>();
  r.get("/v1/audit-log", requireScope("read"), async (c) => {
    const q = parseOrThrow(auditQuery, c.req.query());
    return c.json(
      await listAuditEntries(c.var.services.database.db, {
        tenantId: c.var.auth.tenantId,
        limit: q.limit,
        entityType: q.entity_type,
        entityId: q.entity_id,
        action: q.action,
      }),
    );
  });
  return r;
}
