import { z } from "zod";
import { ApiError } from "../http/errors.js";
import { readBodyBytes } from "../http/body.js";
import { isStorableText } from "../http/storable.js";
import { contractRouter, defineRoute } from "../http/openapi.js";
import { decodeTraces } from "./decode.js";
import { encodeExportResponse, encodeRpcStatus } from "./proto.js";
import type { MiddlewareHandler } from "hono";
import type { AppEnv } from "../http/app-env.js";
import { admitExport, growExport, releaseExport } from "./admission.js";
import { type OtlpDeps, otlpState, receiveTraces } from "./receive.js";

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

/** google.rpc.Status in OTLP/JSON: what every 4xx/5xx answers (OTLP/HTTP specification, "Failures"). */
const RpcStatusJson = z.object({ code: z.number().int().describe("google.rpc.Code"), message: z.string() });
const failure = (description: string) => ({ description, schema: RpcStatusJson, otherContentTypes: [PROTOBUF] });

/** google.rpc.Code of an HTTP error status, per the canonical HTTP mapping of google/rpc/code.proto. */
function rpcCode(status: number): number {
  if (status === 401) return 16; // UNAUTHENTICATED
  if (status === 403) return 7; // PERMISSION_DENIED
  if (status === 404) return 5; // NOT_FOUND
  if (status === 429) return 8; // RESOURCE_EXHAUSTED
  if (status === 503) return 14; // UNAVAILABLE
  if (status >= 500) return 13; // INTERNAL
  return 3; // INVALID_ARGUMENT (400, 413, 415, 422)
}

/**
 * Error answers of the receiver become a google.rpc.Status, as OTLP/HTTP requires: protobuf for a
 * protobuf request, JSON for a JSON one; the status code and headers (Retry-After) stay. The message
 * is the envelope's.
 */
const rpcStatusErrors: MiddlewareHandler<AppEnv> = async (c, next) => {
  await next();
  const res = c.res;
  if (res.status < 400 || !(res.headers.get("content-type") ?? "").startsWith("application/json")) return;
  let message = "";
  try {
    message = String(((await res.clone().json()) as { error?: { message?: unknown } }).error?.message ?? "");
  } catch {
    // not the envelope: the code alone says it
  }
  const json = (c.req.header("content-type") ?? "").toLowerCase().startsWith("application/json");
  const headers = new Headers(res.headers);
  headers.delete("content-length");
  headers.set("content-type", json ? "application/json" : PROTOBUF);
  const code = rpcCode(res.status);
  const body = json ? JSON.stringify({ code, message }) : (encodeRpcStatus(code, message) as Uint8Array<ArrayBuffer>);
  c.res = new Response(body, { status: res.status, headers });
};

/**
 * OTLP/HTTP trace receiver: `OTEL_EXPORTER_OTLP_ENDPOINT=<voxgate>/v1/otlp` makes any
 * OpenTelemetry exporter post here. LiveKit Agents' spans become sessions, turns and request records
 * (src/otlp/map.ts, docs/api/otlp.md).
 */
export function otlpRoutes(deps: OtlpDeps) {
  const r = contractRouter();
  r.use("/v1/otlp/v1/traces", rpcStatusErrors);
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
        400: failure("undecodable body (truncated or malformed protobuf, invalid JSON); every error answers a google.rpc.Status in the request's encoding"),
        401: failure("no valid key"),
        403: failure("the key lacks a scope allowing ingest"),
        413: failure("over the body size limit"),
        415: failure("Content-Type other than application/x-protobuf or application/json"),
        422: failure("X-Voxgate-Project not storable"),
        429: failure("the write path is saturated; retry after Retry-After seconds"),
        500: failure("internal error"),
        503: failure("the database is unavailable; retry"),
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
      const limit = c.var.bodyLimitBytes;
      const saturated = () => {
        c.header("Retry-After", "1");
        return new ApiError("too_many_requests", "the trace write path is saturated; retry after Retry-After seconds");
      };
      const hold = admitExport(state);
      if (!hold) throw saturated();
      try {
        const body = await readBodyBytes(c, limit, (bytes) => {
          if (!growExport(state, hold, bytes, limit)) throw saturated();
        });
        const decoded = decodeTraces(body, contentType);
        const outcome = await receiveTraces(deps, state, auth.tenantId, project, decoded);
        if (contentType.toLowerCase().startsWith("application/json")) {
          const partial = outcome.rejectedSpans > 0 ? { partialSuccess: { rejectedSpans: String(outcome.rejectedSpans), errorMessage: outcome.errorMessage } } : {};
          return c.json(partial, 200);
        }
        return c.body(encodeExportResponse(outcome.rejectedSpans, outcome.errorMessage) as Uint8Array<ArrayBuffer>, 200, { "content-type": PROTOBUF });
      } finally {
        releaseExport(state, hold);
      }
    },
  );
  return r;
}
