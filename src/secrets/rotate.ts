import { and, eq, isNotNull } from "drizzle-orm";
import { providers } from "../db/schema/index.js";
import type { Database } from "../db/client.js";
import type { Logger } from "../logging.js";
import { providerAad, type SecretBox } from "./box.js";

/**
 * Rotation: at start, every stored provider key made with an older key (VOXGATE_SECRET_PREVIOUS)
 * is decrypted and re-encrypted under the current secret, one row per transaction. Rows whose key
 * is not loaded are left as they are and counted (they keep failing until that secret is supplied).
 * Does nothing (and never loads the secret) when no provider key is stored.
 */
export async function reencryptProviderKeys(
  deps: { database: Database; secrets: SecretBox; log: Logger },
): Promise<{ reencrypted: number; unreadable: number }> {
  const { db } = deps.database;
  const rows = await db
    .select({ providerId: providers.providerId, apiKeyEncrypted: providers.apiKeyEncrypted })
    .from(providers)
    .where(isNotNull(providers.apiKeyEncrypted));
  let reencrypted = 0;
  let unreadable = 0;
  for (const row of rows) {
    const stored = row.apiKeyEncrypted;
    if (!stored || !deps.secrets.isStale(stored)) continue;
    const aad = providerAad(row.providerId);
    let plaintext: string;
    try {
      plaintext = deps.secrets.decrypt(stored, aad);
    } catch {
      unreadable++;
      continue;
    }
    await db
      .update(providers)
      .set({ apiKeyEncrypted: deps.secrets.encrypt(plaintext, aad) })
      // Only if nobody changed the row meanwhile (a concurrent PATCH wins).
      .where(and(eq(providers.providerId, row.providerId), eq(providers.apiKeyEncrypted, stored)));
    reencrypted++;
  }
  if (reencrypted || unreadable) deps.log.info({ reencrypted, unreadable }, "provider keys re-encrypted under the current secret");
  return { reencrypted, unreadable };
}
