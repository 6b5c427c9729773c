/**
 * Wire shapes the collector accepts (docs/api/ingest.md): the input types of the very schemas the
 * collector validates with and documents at /v1/openapi.json, so the client cannot drift from them.
 * Type-only imports: nothing of the server is loaded at run time by `voxgate/client`.
 */
import type { z } from "zod";
import type { heartbeatSchema } from "../fleet/presence.js";
import type { deadAirSchema } from "../ingest/dead-air.js";
import type { requestRecordSchema } from "../ingest/records.js";
import type { turnSchema } from "../ingest/turns.js";

/** One request record of POST /v1/ingest. */
export type RequestRecord = z.input<typeof requestRecordSchema>;
/** One turn of POST /v1/ingest/turns. */
export type Turn = z.input<typeof turnSchema>;
/** One dead-air span of POST /v1/ingest/dead-air. */
export type DeadAirEvent = z.input<typeof deadAirSchema>;
/** The body of POST /v1/agents/heartbeat (`status` is preprocessed, case-insensitive, so its input type is spelled here). */
export type HeartbeatSnapshot = Omit<z.input<typeof heartbeatSchema>, "status"> & { status?: "idle" | "busy" | null };
