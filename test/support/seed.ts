import type { Db } from "../../src/db/client.js";
import type { RequestRow } from "../../src/db/schema/requests.js";
import { requestProjections } from "../../src/compose.js";
import { createRequestStore } from "../../src/ingest/store-requests.js";

/** Ingest's request store with the projections the composition root wires (src/compose.ts). */
const requestStore = createRequestStore(requestProjections());

/**
 * One batch of one tenant's rows through ingest's store as the server wires it: the insert, probe
 * marking and every projection (sessions, fleet index, rollups, billing usage) in one transaction.
 * Returns the rows actually inserted.
 */
export const storeRequestRows = (db: Db, tenantId: string | null, rows: RequestRow[]): Promise<RequestRow[]> => requestStore.store(db, tenantId, rows);

/**
 * Stores request rows through ingest's own write path (storeRequestRows), one batch per tenant as
 * ingest calls it.
 * Read-path tests seed with this (or POST /v1/ingest), never with a bare insert that skips those.
 * Returns the rows actually stored (a duplicate id of the same tenant is skipped, as in ingest).
 */
export async function seedRequests(db: Db, rows: RequestRow[]): Promise<RequestRow[]> {
  const byTenant = new Map<string | null, RequestRow[]>();
  for (const r of rows) {
    const tenant = r.tenant_id ?? null;
    byTenant.set(tenant, [...(byTenant.get(tenant) ?? []), r]);
  }
  const stored: RequestRow[] = [];
  for (const [tenant, batch] of byTenant) stored.push(...(await storeRequestRows(db, tenant, batch)));
  return stored;
}
