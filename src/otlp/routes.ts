import { z } from "zod";
import { ApiError } from "../http/errors.js";
import { readBodyBytes } from "../http/body.js";
import { isStorableText } from "../http/storable.js";
import { contractRouter, defineRoute } from "../http/openapi.js";
import { decodeTraces } from "./decode.js";
import { encodeExportResponse } from "./proto.js";
import { MAX_CONCURRENT_EXPORTS, type OtlpDeps, otlpState, receiveTraces } from "./receive.js";

const PROTOBUF = "application/x-protobuf";

/** ExportTraceServiceResponse in OTLP/JSON. */
const ExportResponse = z.object({
  partialSuccess: z
    .object({
      rejectedSpans: z.string().describe("spans refused (bad ids or times, or records the write path skipped), an int64 as a string"),
      errorMessage: z.string(),
    })
    .optional()
    .describe("present only when something was rejected"),
});

/**
 * OTLP/HTTP trace receiver: `OTEL_EXPORTER_OTLP_ENDPOINT=<voxgate>/v1/otlp` makes any
 * OpenTelemetry exporter post here. LiveKit Agents' spans become sessions, turns and request records
 * (src/otlp/map.ts, docs/api/otlp.md).
 */
export function otlpRoutes(deps: OtlpDeps) {
  const r = contractRouter();
  defineRoute(
    r,
    {
      method: "post",
      path: "/v1/otlp/v1/traces",
      tag: "ingest",
      summary: "Receive OpenTelemetry traces (OTLP/HTTP)",
      description:
        "OTLP/HTTP trace export, protobuf (application/x-protobuf) or OTLP/JSON, gzip or deflate accepted. LiveKit Agents spans are mapped to request records, turns and sessions; other spans are counted (voxgate_otlp_spans_unmapped_total) and dropped. Re-sent batches store nothing twice. X-Voxgate-Project sets the project when the resource has no voxgate.project attribute.",
      scope: "ingest",
      body: z.string().describe("an ExportTraceServiceRequest (opentelemetry-proto collector/trace/v1)"),
      bodyMode: "document",
      bodyContentType: PROTOBUF,
      responses: {
        200: {
          description: "stored (after commit): an ExportTraceServiceResponse in the request's encoding",
          schema: ExportResponse,
          otherContentTypes: [PROTOBUF],
        },
        400: { description: "undecodable body (truncated or malformed protobuf, invalid JSON)" },
        413: { description: "payload_too_large: over the body size limit" },
        415: { description: "Content-Type other than application/x-protobuf or application/json" },
        429: { description: "the write path is saturated; retry after Retry-After seconds" },
      },
    },
    async (c) => {
      const { auth } = c.var;
      const state = otlpState(deps);
      const contentType = c.req.header("content-type") ?? "";
      const project = c.req.header("x-voxgate-project") ?? null;
      if (project !== null && (project === "" || project.length > 256 || !isStorableText(project))) {
        throw new ApiError("validation_failed", "X-Voxgate-Project must be 1-256 storable characters");
      }
      if (state.inFlight >= MAX_CONCURRENT_EXPORTS) {
        c.header("Retry-After", "1");
        throw new ApiError("too_many_requests", "the trace write path is saturated; retry after Retry-After seconds");
      }
      state.inFlight++;
      try {
        const decoded = decodeTraces(await readBodyBytes(c, c.var.bodyLimitBytes), contentType);
        const outcome = await receiveTraces(deps, state, auth.tenantId, project, decoded);
        if (contentType.toLowerCase().startsWith("application/json")) {
          const partial = outcome.rejectedSpans > 0 ? { partialSuccess: { rejectedSpans: String(outcome.rejectedSpans), errorMessage: outcome.errorMessage } } : {};
          return c.json(partial, 200);
        }
        return c.body(encodeExportResponse(outcome.rejectedSpans, outcome.errorMessage) as Uint8Array<ArrayBuffer>, 200, { "content-type": PROTOBUF });
      } finally {
        state.inFlight--;
      }
    },
  );
  return r;
}
