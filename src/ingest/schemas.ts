import { z } from "zod";
import { deadAirSchema } from "./dead-air.js";
import { INGEST_BATCH_CAP } from "./batch.js";
import { MAX_LISTED_SKIPS } from "./ingest-requests.js";
import { requestRecordSchema } from "./records.js";
import { MAX_LISTED_ROW_SKIPS, turnSchema } from "./turns.js";

/**
 * Request and answer schemas of the telemetry write path. The bodies are documented only: the
 * handlers read them with readBatch (cap and depth checked on the raw text) and validate each row on
 * its own (the common record without zod, record-fast.ts), so a malformed row is skipped, never the batch.
 */

const batchOf = (row: z.ZodType, what: string) =>
  z
    .array(row)
    .max(INGEST_BATCH_CAP)
    .describe(`a bare JSON array of at most ${INGEST_BATCH_CAP} ${what}, at most 32 levels deep; each row is validated on its own and skipped with its reason when malformed`);

export const IngestBatch = batchOf(
  requestRecordSchema.describe(
    "One request record. Unknown keys are ignored, and so are tenant_id, rated_price_usd and rate_rule: the tenant comes from the key, the price from the collector's rate card. is_probe marks load-test traffic (default false).",
  ),
  "request records",
);
export const TurnBatch = batchOf(turnSchema, "turns");
export const DeadAirBatch = batchOf(deadAirSchema, "dead-air events");

const counts = {
  accepted: z.number().int().describe("rows newly stored by this request"),
  duplicates: z.number().int().describe("rows already stored, or repeated in the batch: counted, never written twice"),
  skipped: z.number().int().describe("malformed rows"),
};

export const IngestResultSchema = z.object({
  received: z.number().int(),
  ...counts,
  skipped_records: z
    .array(z.object({ index: z.number().int().describe("position in the batch"), id: z.string().nullable(), reason: z.string().describe("the first failing field") }))
    .describe(`the first ${MAX_LISTED_SKIPS} skipped records`),
});

export const TimelineResultSchema = z.object({
  ...counts,
  skipped_rows: z.array(z.object({ index: z.number().int(), reason: z.string() })).describe(`the first ${MAX_LISTED_ROW_SKIPS} skipped rows`),
});
