import { z } from "zod";
import type { Database } from "../db/client.js";
import { contractRouter, defineRoute } from "../http/openapi.js";
import { AUDIT_LIMIT_DEFAULT, AUDIT_LIMIT_MAX, AUDIT_LIMIT_MIN, listAuditEntries } from "./queries.js";

const AUDIT_ENTITY_TYPES = ["provider", "model", "project", "rate_rule", "api_key"] as const;
const AUDIT_ACTIONS = ["create", "update", "delete"] as const;

const auditQuery = z.strictObject({
  limit: z
    .string()
    .regex(/^\d+$/, `limit must be an integer from ${AUDIT_LIMIT_MIN} to ${AUDIT_LIMIT_MAX}`)
    .transform(Number)
    .pipe(z.number().int().min(AUDIT_LIMIT_MIN).max(AUDIT_LIMIT_MAX))
    .default(AUDIT_LIMIT_DEFAULT)
    .describe(`integer ${AUDIT_LIMIT_MIN}-${AUDIT_LIMIT_MAX}, default ${AUDIT_LIMIT_DEFAULT}`),
  entity_type: z.enum(AUDIT_ENTITY_TYPES).optional(),
  entity_id: z.string().min(1).max(400).optional().describe("exact match"),
  action: z.enum(AUDIT_ACTIONS).optional(),
});

const entityView = z.unknown().describe("the public view of the entity; provider keys only as api_key_masked");

export const AuditEntry = z
  .object({
    id: z.number().int().describe("increasing"),
    ts: z.string().describe("ISO-8601 UTC time of the change"),
    actor: z.string().describe("who: static:<name or key-hash prefix> for config keys, the vk_ key id, or operator (auth off)"),
    tenant_id: z.string().nullable().describe("the actor key's tenant, null for untenanted keys"),
    entity_type: z.enum(AUDIT_ENTITY_TYPES),
    entity_id: z.string(),
    action: z.enum(AUDIT_ACTIONS),
    before: entityView.describe("the entity before the change; null on create"),
    after: entityView.describe("the entity after the change; null on delete"),
  })
  .meta({ id: "AuditEntry" });

/**
 * GET /v1/audit-log, read scope. An untenanted key sees every entry; a tenant-bound
 * key sees only entries its own tenant's keys made.
 */
/** The audit log reads only the store. */
export function auditRoutes(deps: { database: Database }) {
  const r = contractRouter();
  defineRoute(
    r,
    {
      method: "get",
      path: "/v1/audit-log",
      tag: "audit",
      summary: "Changes to providers, models, projects, rate rules and keys, newest first",
      scope: "read",
      query: auditQuery,
      responses: { 200: { description: "the entries visible to the key", schema: z.array(AuditEntry) } },
    },
    async (c, { query: q }) =>
      c.json(
        await listAuditEntries(deps.database.db, {
          tenantId: c.var.auth.tenantId,
          limit: q.limit,
          entityType: q.entity_type,
          entityId: q.entity_id,
          action: q.action,
        }),
      ),
  );
  return r;
}
