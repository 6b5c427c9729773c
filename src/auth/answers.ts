import { z } from "zod";
import { DomainError } from "../errors.js";
import type { Database } from "../db/client.js";
import type { Logger } from "../logging.js";
import type { VirtualKeyVerifier } from "./virtual-keys.js";
import type { AuthContext } from "./context.js";
import { revokeKey } from "./key-service.js";
import { listApiKeys, publicKeyRow } from "./queries.js";

/** The key routes' answers as plain functions: what /v1/api-keys and the MCP tools both return. */

const booleanQuery = z
  .enum(["true", "false", "1", "0"])
  .optional()
  .transform((v) => (v === undefined ? undefined : v === "true" || v === "1"));

export const keyListQuery = z.object({ include_revoked: booleanQuery.describe("true (default) or false") });

/** GET /v1/api-keys: the keys of the caller's tenant (every tenant for an operator), never hashes or plaintexts. */
export async function apiKeyList(services: { database: Database }, auth: AuthContext, q: z.output<typeof keyListQuery>) {
  const rows = await listApiKeys(services.database.db, auth, { includeRevoked: q.include_revoked ?? true });
  return rows.map(publicKeyRow);
}

/** DELETE /v1/api-keys/{key_id}: soft-revoke (the row is kept for audit); 404 when the key is not the caller's to see. */
export async function revokeApiKey(services: { database: Database; virtualKeys: VirtualKeyVerifier; log: Logger }, auth: AuthContext, keyId: string) {
  const row = await revokeKey(services.database.db, services.virtualKeys, auth, keyId);
  if (!row) throw new DomainError("not_found", "no API key with this id");
  services.log.info({ key_id: row.id, actor: auth.actor }, "api key revoked");
  return publicKeyRow(row);
}
