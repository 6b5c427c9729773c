import protobuf from "protobufjs";

/*
 * The OTLP trace export messages (opentelemetry-proto v1.x: common/v1/common.proto,
 * resource/v1/resource.proto, trace/v1/trace.proto, collector/trace/v1/trace_service.proto) as a
 * protobufjs JSON descriptor: the field numbers and types of those files, restricted to what the
 * receiver reads. Fields left out (span events and links, schema URLs, trace state, flags) are
 * skipped by the reader by wire type, as any protobuf reader skips unknown fields.
 */
const KeyValue = { fields: { key: { type: "string", id: 1 }, value: { type: "AnyValue", id: 2 } } };
const descriptor = {
  nested: {
    otlp: {
      nested: {
        AnyValue: {
          oneofs: { value: { oneof: ["stringValue", "boolValue", "intValue", "doubleValue", "arrayValue", "kvlistValue", "bytesValue"] } },
          fields: {
            stringValue: { type: "string", id: 1 },
            boolValue: { type: "bool", id: 2 },
            intValue: { type: "int64", id: 3 },
            doubleValue: { type: "double", id: 4 },
            arrayValue: { type: "ArrayValue", id: 5 },
            kvlistValue: { type: "KeyValueList", id: 6 },
            bytesValue: { type: "bytes", id: 7 },
          },
        },
        ArrayValue: { fields: { values: { rule: "repeated", type: "AnyValue", id: 1 } } },
        KeyValueList: { fields: { values: { rule: "repeated", type: "KeyValue", id: 1 } } },
        KeyValue,
        Resource: { fields: { attributes: { rule: "repeated", type: "KeyValue", id: 1 } } },
        InstrumentationScope: { fields: { name: { type: "string", id: 1 }, version: { type: "string", id: 2 } } },
        Status: { fields: { message: { type: "string", id: 2 }, code: { type: "int32", id: 3 } } },
        Span: {
          fields: {
            traceId: { type: "bytes", id: 1 },
            spanId: { type: "bytes", id: 2 },
            parentSpanId: { type: "bytes", id: 4 },
            name: { type: "string", id: 5 },
            kind: { type: "int32", id: 6 },
            startTimeUnixNano: { type: "fixed64", id: 7 },
            endTimeUnixNano: { type: "fixed64", id: 8 },
            attributes: { rule: "repeated", type: "KeyValue", id: 9 },
            status: { type: "Status", id: 15 },
          },
        },
        ScopeSpans: { fields: { scope: { type: "InstrumentationScope", id: 1 }, spans: { rule: "repeated", type: "Span", id: 2 } } },
        ResourceSpans: { fields: { resource: { type: "Resource", id: 1 }, scopeSpans: { rule: "repeated", type: "ScopeSpans", id: 2 } } },
        ExportTraceServiceRequest: { fields: { resourceSpans: { rule: "repeated", type: "ResourceSpans", id: 1 } } },
        ExportTracePartialSuccess: { fields: { rejectedSpans: { type: "int64", id: 1 }, errorMessage: { type: "string", id: 2 } } },
        ExportTraceServiceResponse: { fields: { partialSuccess: { type: "ExportTracePartialSuccess", id: 1 } } },
        // google.rpc.Status (google/rpc/status.proto), without its details: the body of every 4xx/5xx.
        RpcStatus: { fields: { code: { type: "int32", id: 1 }, message: { type: "string", id: 2 } } },
      },
    },
  },
};

const root = protobuf.Root.fromJSON(descriptor);
export const ExportTraceServiceRequest = root.lookupType("otlp.ExportTraceServiceRequest");
export const ExportTraceServiceResponse = root.lookupType("otlp.ExportTraceServiceResponse");
const RpcStatus = root.lookupType("otlp.RpcStatus");

/** A google.rpc.Status, protobuf-encoded. */
export function encodeRpcStatus(code: number, message: string): Uint8Array {
  return RpcStatus.encode(RpcStatus.fromObject({ code, message })).finish();
}

/** Decodes a google.rpc.Status (tests read the receiver's error answers with it). */
export function decodeRpcStatus(bytes: Uint8Array): { code: number; message: string } {
  const o = RpcStatus.toObject(RpcStatus.decode(bytes), { defaults: true }) as { code: number; message: string };
  return { code: o.code, message: o.message };
}

/** Plain shapes of the decoded messages (protobufjs' toObject with longs as numbers, bytes as buffers). */
export interface PbAnyValue {
  stringValue?: string;
  boolValue?: boolean;
  intValue?: number | string;
  doubleValue?: number;
  arrayValue?: { values?: PbAnyValue[] };
  kvlistValue?: { values?: PbKeyValue[] };
  bytesValue?: Uint8Array | string;
}
export interface PbKeyValue {
  key?: string;
  value?: PbAnyValue;
}
export interface PbSpan {
  traceId?: Uint8Array | string;
  spanId?: Uint8Array | string;
  parentSpanId?: Uint8Array | string;
  name?: string;
  kind?: number;
  startTimeUnixNano?: number | string;
  endTimeUnixNano?: number | string;
  attributes?: PbKeyValue[];
  status?: { message?: string; code?: number | string };
}
export interface PbResourceSpans {
  resource?: { attributes?: PbKeyValue[] };
  scopeSpans?: { spans?: PbSpan[] }[];
}
export interface PbExportRequest {
  resourceSpans?: PbResourceSpans[];
}

/**
 * Decodes an ExportTraceServiceRequest. protobufjs checks every length against the bytes left
 * (a truncated or lying length throws "index out of range"), so the caller turns any throw into a 400.
 */
export function decodeExportRequest(bytes: Uint8Array): PbExportRequest {
  const message = ExportTraceServiceRequest.decode(bytes);
  return ExportTraceServiceRequest.toObject(message, { longs: Number, defaults: false, arrays: true }) as PbExportRequest;
}

/** The answer body, protobuf-encoded (partial_success only when something was rejected). */
export function encodeExportResponse(rejectedSpans: number, errorMessage: string): Uint8Array {
  const body = rejectedSpans > 0 || errorMessage ? { partialSuccess: { rejectedSpans, errorMessage } } : {};
  return ExportTraceServiceResponse.encode(ExportTraceServiceResponse.fromObject(body)).finish();
}
