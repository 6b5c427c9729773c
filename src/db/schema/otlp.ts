import { sql } from "drizzle-orm";
import { boolean, doublePrecision, index, integer, jsonb, pgTable, text, unique } from "drizzle-orm/pg-core";
import { tstz } from "./columns.js";

/**
 * What POST /v1/otlp/v1/traces fixed for a trace on first sight: the session every record and turn
 * of the trace lands in (so spans of one trace spread over several export batches meet in one
 * session), and the room and agent once a span names them.
 */
export const otlpTraces = pgTable(
  "otlp_traces",
  {
    tenantId: text(),
    traceId: text().notNull(),
    sessionId: text().notNull(),
    roomName: text(),
    agentId: text(),
    createdAt: tstz().notNull().default(sql`now()`),
  },
  (t) => [unique("otlp_traces_trace_tenant_uq").on(t.traceId, t.tenantId).nullsNotDistinct(), index("otlp_traces_created_idx").on(t.createdAt)],
);

/**
 * The mapped spans of a trace already received, reduced to what mapping reads (ids, name, times in
 * epoch ms, status, the usage and timing attributes, never message contents): later batches pair
 * them (a user turn with the agent turn that answers it, a request span with its wrappers), and the
 * spans of a trace whose session is not known yet wait here, `mapped` false, until it is. Pruned
 * after a day (src/otlp/store.ts).
 */
export const otlpSpans = pgTable(
  "otlp_spans",
  {
    tenantId: text(),
    traceId: text().notNull(),
    spanId: text().notNull(),
    parentSpanId: text(),
    name: text().notNull(),
    startMs: doublePrecision().notNull(),
    endMs: doublePrecision().notNull(),
    statusCode: integer().notNull().default(0),
    statusMessage: text(),
    attributes: jsonb().notNull(),
    /** The resource's project (voxgate.project or X-Voxgate-Project). */
    project: text(),
    /** Sent by Python's livekit-agents (telemetry.sdk.language): its user-turn delays are seconds. */
    python: boolean().notNull().default(false),
    /** Records and turns were derived from it (its trace's session was known). */
    mapped: boolean().notNull().default(false),
    createdAt: tstz().notNull().default(sql`now()`),
  },
  (t) => [unique("otlp_spans_span_tenant_uq").on(t.traceId, t.spanId, t.tenantId).nullsNotDistinct(), index("otlp_spans_created_idx").on(t.createdAt)],
);
