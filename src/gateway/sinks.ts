import type { VoxgateClient } from "../client/index.js";
import { type IngestDeps, ingestRecords } from "../ingest/ingest-requests.js";
import type { Logger } from "../logging.js";
import type { TypedRecord } from "../ingest/records.js";
import type { GatewayRecord, RecordSink } from "./recorder.js";

/**
 * Local mode: each batch goes through ingest's typed entry (the records are built in process: no
 * wire-format parse; each value's rule, rating, the insert and its projections as POST /v1/ingest),
 * one call per tenant, since the tenant is a parameter of that path.
 */
export function ingestSink(deps: IngestDeps & { log: Logger }): RecordSink {
  return {
    async write(batch) {
      const byTenant = new Map<string | null, GatewayRecord["record"][]>();
      for (const r of batch) {
        const list = byTenant.get(r.tenantId);
        if (list) list.push(r.record);
        else byTenant.set(r.tenantId, [r.record]);
      }
      for (const [tenantId, records] of byTenant) {
        const result = await ingestRecords(deps, tenantId, records);
        if (result.skipped > 0) {
          deps.log.warn({ skipped: result.skipped, reasons: result.skipped_records.slice(0, 3) }, "gateway records skipped by ingest validation");
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
export function collectorSink(collectorUrl: string, apiKey: string | undefined, agentId?: string): RecordSink {
  // Made with the first batch: the client and undici under it are not loaded before a call is recorded (docs/perf/startup.md).
  let client: Promise<VoxgateClient> | null = null;
  const clientOf = () =>
    // env {}: everything the client would read from the environment is given here (src/config/env.ts reads it).
    (client ??= import("../client/index.js").then(({ VoxgateClient }) => new VoxgateClient({ collectorUrl, apiKey, agentId, env: {}, heartbeatIntervalMs: 0, flushIntervalMs: 500 })));
  return {
    async write(batch: GatewayRecord[]) {
      const c = await clientOf();
      for (const { record } of batch) c.record(wireRecord(record));
    },
    close: async () => {
      if (client) await (await client).close();
    },
  };
}

/** The wire spells a timestamp as epoch ms (or ISO), never a Date: the gateway's records already use ms (no copy then). */
function wireRecord(r: TypedRecord): Omit<TypedRecord, "timestamp"> & { timestamp: number } {
  return r.timestamp instanceof Date ? { ...r, timestamp: r.timestamp.getTime() } : (r as Omit<TypedRecord, "timestamp"> & { timestamp: number });
}
