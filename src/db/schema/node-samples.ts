import { bigserial, doublePrecision, index, jsonb, pgTable, primaryKey, text } from "drizzle-orm/pg-core";
import { tstz } from "./columns.js";

/**
 * Samples scraped from LiveKit server/SIP and host exporters, filed per node on one time axis.
 * Partitioned by day on ts in the migration SQL (0027_day_partitions).
 */
export const nodeSamples = pgTable(
  "node_samples",
  {
    id: bigserial({ mode: "number" }).notNull(),
    ts: tstz().notNull(),
    node: text().notNull(),
    /** livekit-server | livekit-sip | host-exporter */
    source: text().notNull(),
    metric: text().notNull(),
    labels: jsonb(),
    value: doublePrecision().notNull(),
  },
  (t) => [primaryKey({ columns: [t.id, t.ts] }), index("node_samples_node_ts_idx").on(t.node, t.ts)],
);
