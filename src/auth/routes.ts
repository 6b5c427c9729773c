import { Hono } from "hono";
import { z } from "zod";
import { recordAudit } from "../audit/record.js";
import { ApiError, parseOrThrow } from "../http/errors.js";
import type { AppEnv } from "../http/app-env.js";
import { readJson } from "../http/body.js";
import { requireScope } from "./gate.js";
import { getApiKeyById, listApiKeys, publicKeyRow } from "./queries.js";
import { mintVirtualKey, revokeVirtualKey } from "./virtual-keys.js";

const mintBody = z.strictObject({
  name: z.string().trim().min(1).max(200),
  tenant_id: z.string().trim().min(1).max(200).nullish(),
  issued_by: z.string().max(200).nullish(),
  /** Narrower keys on request; minted keys default to `*` (role tenant keeps them off admin routes). */
  scopes: z.array(z.enum(["read", "write", "ingest", "infer", "*"])).min(1).optional(),
  role: z.enum(["tenant", "admin"]).default("tenant"),
});

const booleanQuery = z
  .enum(["true", "false", "1", "0"])
  .optional()
  .transform((v) => (v === undefined ? undefined : v === "true" || v === "1"));

/**
 * Endpoints 34-37: virtual API keys. Every route needs admin (a tenant-role key gets 403), and like
 * every other route they take the caller's tenant: a tenant-bound admin key mints, lists, reads and
 * revokes its own tenant's keys only.
 */
export function apiKeyRoutes() {
  const r = new Hono<AppEnv>();
  r.use("*", requireScope("admin"));

  r.post("/", async (c) => {
    const { services } = c.var;
    const { auth } = c.var;
    const body = parseOrThrow(mintBody, await readJson(c, services.config.serve.body_limit_bytes));
    // A tenant-bound admin key mints only for its own tenant: no key beyond the minter's rights.
    if (auth.tenantId !== null && (body.tenant_id ?? auth.tenantId) !== auth.tenantId) {
      throw new ApiError("forbidden", "this key can only mint keys for its own tenant");
    }
    const { plaintext, row } = await services.database.db.transaction(async (tx) => {
      const minted = await mintVirtualKey(tx, {
        name: body.name,
        tenantId: body.tenant_id ?? auth.tenantId,
        issuedBy: body.issued_by ?? auth.actor,
        scopes: body.scopes ?? ["*"],
        role: body.role,
      });
      await recordAudit(tx, auth, {
        entityType: "api_key",
        entityId: minted.row.id,
        action: "create",
        after: publicKeyRow(minted.row),
      });
      return minted;
    });
    services.log.info({ key_id: row.id, tenant_id: row.tenantId, actor: c.var.auth.actor }, "api key minted");
    const key = publicKeyRow(row);
    return c.json({ plaintext, ...key, key }, 201);
  });

  r.get("/", async (c) => {
    const q = parseOrThrow(z.object({ include_revoked: booleanQuery }), c.req.query());
    const rows = await listApiKeys(c.var.services.database.db, c.var.auth, { includeRevoked: q.include_revoked ?? true });
    return c.json(rows.map(publicKeyRow));
  });

  r.get("/:key_id", async (c) => {
    const row = await getApiKeyById(c.var.services.database.db, c.var.auth, c.req.param("key_id"));
    if (!row) throw new ApiError("not_found", "no API key with this id");
    return c.json(publicKeyRow(row));
  });

  r.delete("/:key_id", async (c) => {
    const { services } = c.var;
    const row = await services.database.db.transaction(async (tx) => {
      const revoked = await revokeVirtualKey(tx, services.virtualKeys, c.var.auth, c.req.param("key_id"));
      if (revoked) {
        await recordAudit(tx, c.var.auth, {
          entityType: "api_key",
          entityId: revoked.id,
          action: "delete",
          after: publicKeyRow(revoked),
        });
      }
      return revoked;
    });
    if (!row) throw new ApiError("not_found", "no API key with this id");
    services.log.info({ key_id: row.id, actor: c.var.auth.actor }, "api key revoked");
    return c.body(null, 204);
  });

  return r;
}
