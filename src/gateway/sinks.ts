import { VoxgateClient } from "../client/index.js";
import { ingestRequests } from "../ingest/ingest-requests.js";
import type { Services } from "../services.js";
import type { GatewayRecord, RecordSink } from "./recorder.js";

/**
 * Local mode: each batch goes through exactly the path POST /v1/ingest uses (validation, rating,
 * sessions, rollups), one call per tenant, since the tenant is a parameter of that path.
 */
export function ingestSink(services: Services): RecordSink {
  return {
    async write(batch) {
      const byTenant = new Map<string | null, unknown[]>();
      for (const r of batch) {
        const list = byTenant.get(r.tenantId);
        if (list) list.push(r.record);
        else byTenant.set(r.tenantId, [r.record]);
      }
      for (const [tenantId, records] of byTenant) {
        const result = await ingestRequests(services, tenantId, records);
        if (result.skipped > 0) {
          services.log.warn({ skipped: result.skipped, reasons: result.skipped_records.slice(0, 3) }, "gateway records skipped by ingest validation");
        }
      }
    },
  };
}

/**
 * Sidecar mode (VOXGATE_COLLECTOR_URL set): records are pushed to the collector with voxgate/client
 * under the collector key (VOXGATE_API_KEY). The collector takes the tenant from that key, so a
 * sidecar serves one tenant: its operator's.
 */
export function collectorSink(env: NodeJS.ProcessEnv, collectorUrl: string, apiKey: string | undefined): RecordSink & { client: VoxgateClient } {
  const client = new VoxgateClient({ collectorUrl, apiKey, env, heartbeatIntervalMs: 0, flushIntervalMs: 500 });
  return {
    client,
    async write(batch: GatewayRecord[]) {
      for (const r of batch) client.record(r.record);
    },
    close: () => client.close(),
  };
}
