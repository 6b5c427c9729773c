import type { Db } from "../../src/db/client.js";
import type { RequestRow } from "../../src/db/schema/requests.js";
import { storeRequestRows } from "../../src/ingest/store-requests.js";

/**
 * Stores request rows through ingest's own write path (`storeRequestRows`: the insert, the sessions
 * upsert, probe marking and the rollups in one transaction), one batch per tenant as ingest calls it.
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
