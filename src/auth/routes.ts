import { z } from "zod";
import type { Database } from "../db/client.js";
import type { Logger } from "../logging.js";
import type { VirtualKeyVerifier } from "./virtual-keys.js";
import { ApiError } from "../http/errors.js";
import { contractRouter, defineRoute } from "../http/openapi.js";
import { apiKeyList, keyListQuery, revokeApiKey } from "./answers.js";
import { mintKey } from "./key-service.js";
import { getApiKeyById, publicKeyRow } from "./queries.js";

const mintBody = z.strictObject({
  name: z.string().trim().min(1).max(200).describe("what the key is for"),
  tenant_id: z.string().trim().min(1).max(200).nullish().describe("bind the key to one tenant (a tenant-bound minter: its own only)"),
  issued_by: z.string().max(200).nullish().describe("audit string; defaults to the minter"),
  /** Narrower keys on request; minted keys default to `*` (role tenant keeps them off admin routes). */
  scopes: z.array(z.enum(["read", "write", "ingest", "infer", "*"])).min(1).optional().describe("defaults to [\"*\"]"),
  role: z.enum(["tenant", "admin"]).default("tenant"),
});

/** A key as every answer shows it: never its hash or plaintext. */
export const ApiKey = z
  .object({
    id: z.string(),
    name: z.string(),
    tenant_id: z.string().nullable(),
    issued_by: z.string().nullable(),
    key_prefix: z.string().describe("vk_ plus 12 characters, stored in clear for lookup"),
    scopes: z.array(z.string()),
    role: z.enum(["tenant", "admin"]),
    created_at: z.string(),
    revoked_at: z.string().nullable(),
  })
  .meta({ id: "ApiKey" });

const MintedKey = ApiKey.extend({ plaintext: z.string().describe("the key itself, shown once"), key: ApiKey });
const keyParams = z.object({ key_id: z.string() });
const TAG = "api-keys";

/**
 * /v1/api-keys: virtual API keys (docs/auth.md). Every route needs admin (a tenant-role key gets 403), and like
 * every other route they take the caller's tenant: a tenant-bound admin key mints, lists, reads and
 * revokes its own tenant's keys only. Mint and revoke are the same service as `voxgate keys`.
 */
/** Minting, listing and revoking keys: the store, the vk_ verifier (its cache forgets a revoked key) and the log. */
export interface ApiKeyRouteDeps {
  database: Database;
  virtualKeys: VirtualKeyVerifier;
  log: Logger;
}

export function apiKeyRoutes(deps: ApiKeyRouteDeps) {
  const r = contractRouter();

  defineRoute(
    r,
    {
      method: "post",
      path: "/v1/api-keys",
      tag: TAG,
      summary: "Mint a vk_ key (plaintext shown once)",
      scope: "admin",
      body: mintBody,
      responses: { 201: { description: "the minted key", schema: MintedKey } },
    },
    async (c, { body }) => {
      const { auth } = c.var;
      // A tenant-bound admin key mints only for its own tenant: no key beyond the minter's rights.
      if (auth.tenantId !== null && (body.tenant_id ?? auth.tenantId) !== auth.tenantId) {
        throw new ApiError("forbidden", "this key can only mint keys for its own tenant");
      }
      const { plaintext, row } = await mintKey(deps.database.db, auth, {
        name: body.name,
        tenantId: body.tenant_id ?? auth.tenantId,
        issuedBy: body.issued_by ?? auth.actor,
        scopes: body.scopes ?? ["*"],
        role: body.role,
      });
      deps.log.info({ key_id: row.id, tenant_id: row.tenantId, actor: auth.actor }, "api key minted");
      const key = publicKeyRow(row);
      return c.json({ plaintext, ...key, key }, 201);
    },
  );

  defineRoute(
    r,
    {
      method: "get",
      path: "/v1/api-keys",
      tag: TAG,
      summary: "List keys",
      scope: "admin",
      query: keyListQuery,
      responses: { 200: { description: "the keys in the caller's tenant", schema: z.array(ApiKey) } },
    },
    async (c, { query }) => c.json(await apiKeyList(deps, c.var.auth, query)),
  );

  defineRoute(
    r,
    {
      method: "get",
      path: "/v1/api-keys/{key_id}",
      tag: TAG,
      summary: "One key",
      scope: "admin",
      params: keyParams,
      responses: { 200: { description: "the key", schema: ApiKey } },
    },
    async (c, { params }) => {
      const row = await getApiKeyById(deps.database.db, c.var.auth, params.key_id);
      if (!row) throw new ApiError("not_found", "no API key with this id");
      return c.json(publicKeyRow(row));
    },
  );

  defineRoute(
    r,
    {
      method: "delete",
      path: "/v1/api-keys/{key_id}",
      tag: TAG,
      summary: "Revoke a key (the row is kept for audit)",
      scope: "admin",
      params: keyParams,
      responses: { 204: { description: "revoked" } },
    },
    async (c, { params }) => {
      await revokeApiKey(deps, c.var.auth, params.key_id);
      return c.body(null, 204);
    },
  );

  return r;
}
