import { recordAudit } from "../audit/record.js";
import type { Db } from "../db/client.js";
import type { AuthContext } from "./context.js";
import { publicKeyRow } from "./queries.js";
import { type MintInput, mintVirtualKey, revokeVirtualKey, type VirtualKeyVerifier } from "./virtual-keys.js";

/**
 * Key operations shared by POST/DELETE /v1/api-keys and `voxgate keys create|revoke`: each writes
 * the key change and its audit entry in one transaction. `actor` is who the audit entry names and,
 * for revoke, the tenant scope the key must be in.
 */
export async function mintKey(db: Db, actor: AuthContext, input: MintInput) {
  return db.transaction(async (tx) => {
    const minted = await mintVirtualKey(tx, input);
    await recordAudit(tx, actor, { entityType: "api_key", entityId: minted.row.id, action: "create", after: publicKeyRow(minted.row) });
    return minted;
  });
}

/** The revoked row, or null when no key with this id is in the actor's scope. */
export async function revokeKey(db: Db, verifier: VirtualKeyVerifier | null, actor: AuthContext, keyId: string) {
  return db.transaction(async (tx) => {
    const revoked = await revokeVirtualKey(tx, verifier, actor, keyId);
    if (revoked) await recordAudit(tx, actor, { entityType: "api_key", entityId: revoked.id, action: "delete", after: publicKeyRow(revoked) });
    return revoked;
  });
}
