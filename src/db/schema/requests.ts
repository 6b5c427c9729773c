import { sql } from "drizzle-orm";
import { bigint, boolean, doublePrecision, index, jsonb, pgTable, text, unique, uuid } from "drizzle-orm/pg-core";
import type { StoredRow } from "../table-columns.js";
import { money, tstz } from "./columns.js";

/**
 * One STT/LLM/TTS call, as recorded by the gateway or ingested from an agent. The id is the
 * agent's idempotency key within its tenant: (id, tenant_id) is unique, NULL (operator rows) counting
 * as one more tenant, so no tenant can squat, or learn of, another tenant's ids.
 *
 * Partitioned by day on `ts` (PARTITION BY RANGE, a DEFAULT partition): that lives in the migration
 * SQL (0027_day_partitions) and src/retention/partitions.ts, not here; this file describes the columns
 * and the keys, which include the partition key.
 */
export const requests = pgTable(
  "requests",
  {
    id: uuid().notNull(),
    ts: tstz().notNull(),
    tenantId: text(),
    project: text().notNull().default("default"),
    sessionId: text(),
    roomName: text(),
    agentId: text(),
    modality: text().notNull(),
    modelId: text().notNull(),
    provider: text().notNull(),
    status: text().notNull().default("success"),
    errorMessage: text(),
    fallbackFrom: text(),
    ttfbMs: doublePrecision(),
    totalLatencyMs: doublePrecision(),
    /** What the provider charged (agent-computed, or priced from the catalog when absent). */
    costUsd: money(),
    /** What the operator charges its tenant, stamped at write time by rateRequest. */
    ratedPriceUsd: money(),
    rateRule: text(),
    /** priced | unknown (catalog lacks the model) | unrated (catalog matched, holds no rate). */
    pricing: text().notNull().default("priced"),
    inputTokens: bigint({ mode: "number" }),
    outputTokens: bigint({ mode: "number" }),
    cachedInputTokens: bigint({ mode: "number" }),
    /** Of input_tokens, the audio ones (realtime models price audio and text tokens apart). */
    inputAudioTokens: bigint({ mode: "number" }),
    /** Of output_tokens, the audio ones. */
    outputAudioTokens: bigint({ mode: "number" }),
    audioSeconds: doublePrecision(),
    characters: bigint({ mode: "number" }),
    inputUnits: doublePrecision(),
    outputUnits: doublePrecision(),
    metadata: jsonb(),
    isProbe: boolean().notNull().default(false),
    createdAt: tstz().notNull().default(sql`now()`),
  },
  (t) => [
    // The partition key (ts) is in the key, as Postgres requires of a partitioned table's unique
    // constraints: a re-sent record carries its timestamp, so it meets its first copy (docs/operations.md).
    unique("requests_id_ts_tenant_uq").on(t.id, t.ts, t.tenantId).nullsNotDistinct(),
    index("requests_ts_idx").on(t.ts),
    index("requests_tenant_ts_idx").on(t.tenantId, t.ts),
    index("requests_project_ts_idx").on(t.project, t.ts),
    // Partial: every lookup is by a given session or room (`= x`, `IN (…)`, which imply NOT NULL),
    // and gateway records without one (all of them carry no room) then skip two index inserts
    // (Postgres CPU per stored gateway row ≈ 17.0 -> 15.2 us, docs/PERFORMANCE.md).
    index("requests_session_idx").on(t.sessionId).where(sql`${t.sessionId} IS NOT NULL`),
    // Probe marking: a probe call flags its room's requests (src/calls/upsert.ts).
    index("requests_room_name_idx").on(t.roomName).where(sql`${t.roomName} IS NOT NULL`),
  ],
);

/**
 * A request row as ingest writes it, keyed by stored column names (what ingest's insert unnests
 * column by column, so no renaming on the hot path). `created_at` is the database's. A column added
 * above is a key here (optional when nullable or defaulted) with no other declaration to edit.
 */
export type RequestRow = StoredRow<Omit<typeof requests.$inferInsert, "createdAt">>;
