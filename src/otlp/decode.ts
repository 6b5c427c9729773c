import { DomainError } from "../errors.js";
import { type FreshSpan, READ_ATTRIBUTES } from "./map.js";
import { type AttributeKeys, MAX_STRING, MAX_VALUE_DEPTH, type PbAnyValue, type PbExportRequest, type PbKeyValue, type PbSpan, readExportRequest, type WireResourceSpans } from "./proto.js";
import type { Attrs, AttrValue, DecodedRequest, ResourceBatch, Span } from "./spans.js";

const TRACE_ID = /^[0-9a-f]{32}$/;
const SPAN_ID = /^[0-9a-f]{16}$/;
const ZERO_TRACE = "0".repeat(32);
const ZERO_SPAN = "0".repeat(16);

/**
 * An OTLP/HTTP trace export body to the receiver's spans. Protobuf (application/x-protobuf) is read
 * with protobufjs, JSON (application/json) per OTLP/JSON: ids in hex, nanosecond times as strings
 * or numbers, enums as integers. An undecodable body is a 400; a span with a bad id or time is
 * rejected alone (counted in partial_success). Only the attributes in `keys` are decoded.
 */
export function decodeTraces(bytes: Uint8Array, contentType: string, keys: AttributeKeys = READ_ATTRIBUTES): DecodedRequest {
  const type = contentType.split(";")[0]?.trim().toLowerCase() ?? "";
  let request: PbExportRequest;
  if (type === "application/x-protobuf" || type === "application/protobuf") {
    let wire: WireResourceSpans[];
    try {
      wire = readExportRequest(bytes, keys);
    } catch (err) {
      throw new DomainError("bad_request", `undecodable OTLP protobuf: ${(err as Error).message.slice(0, 200)}`);
    }
    return checked(wire);
  } else if (type === "application/json") {
    let parsed: unknown;
    try {
      parsed = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes));
    } catch (err) {
      throw new DomainError("bad_request", `undecodable OTLP JSON: ${(err as Error).message.slice(0, 200)}`);
    }
    if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) {
      throw new DomainError("bad_request", "an OTLP/JSON body is an ExportTraceServiceRequest object");
    }
    request = parsed as PbExportRequest;
  } else {
    throw new DomainError("unsupported_media_type", "Content-Type must be application/x-protobuf or application/json");
  }
  return normalise(request, keys);
}

/** OTLP/JSON's request: each span checked (toSpan), only the attributes in `keys` read (as the protobuf reader keeps them). */
function normalise(request: PbExportRequest, keys: AttributeKeys): DecodedRequest {
  const out: DecodedRequest = { batches: [], rejected: 0, firstRejection: null };
  for (const rs of list(request.resourceSpans)) {
    if (!isObject(rs)) continue;
    const batch: ResourceBatch = { resource: attributes(isObject(rs.resource) ? rs.resource.attributes : undefined, keys), spans: [] };
    for (const ss of list(rs.scopeSpans)) {
      if (!isObject(ss)) continue;
      for (const raw of list(ss.spans)) {
        const span = isObject(raw) ? toSpan(raw as PbSpan, attributes((raw as PbSpan).attributes, keys)) : "not an object";
        if (typeof span === "string") reject(out, span);
        else batch.spans.push(span);
      }
    }
    if (batch.spans.length > 0) out.batches.push(batch);
  }
  return out;
}

function reject(out: DecodedRequest, reason: string): void {
  out.rejected++;
  out.firstRejection ??= reason;
}

/**
 * The protobuf reader's spans checked in place (ids, times; name and status message cut to length): a
 * bad one is rejected alone, with the first reason. Its ids are lower-case hex by construction: only
 * their length is checked (the pattern test of three ids a span showed in the CPU profile).
 */
function checked(wire: WireResourceSpans[]): DecodedRequest {
  const out: DecodedRequest = { batches: [], rejected: 0, firstRejection: null };
  for (const rs of wire) {
    const batch: ResourceBatch = { resource: rs.resource, spans: [] };
    for (const span of rs.spans) {
      const problem = spanProblem(span);
      if (problem !== null) {
        reject(out, problem);
        continue;
      }
      if (span.parentSpanId !== null && !isSpanId(span.parentSpanId)) span.parentSpanId = null;
      if (span.name.length > 256) span.name = span.name.slice(0, 256);
      if (span.statusCode !== 1 && span.statusCode !== 2) span.statusCode = 0;
      if (span.statusMessage.length > 1024) span.statusMessage = span.statusMessage.slice(0, 1024);
      batch.spans.push(span);
    }
    if (batch.spans.length > 0) out.batches.push(batch);
  }
  return out;
}

/** Why a span is refused (bad ids or times, as toSpan words it), or null. */
function spanProblem(s: Span): string | null {
  if (s.traceId.length !== 32 || s.traceId === ZERO_TRACE) return "span with an invalid trace id";
  if (!isSpanId(s.spanId)) return "span with an invalid span id";
  if (!(s.startMs > 0 && s.endMs > 0 && s.endMs >= s.startMs && Number.isFinite(s.endMs))) return `span ${s.spanId}: invalid start or end time`;
  return null;
}

/** An OTLP/JSON span to the receiver's span (project and runtime unset), or why it is refused. */
function toSpan(s: PbSpan, attributes: Attrs): FreshSpan | string {
  const traceId = hexId(s.traceId);
  const spanId = hexId(s.spanId);
  if (traceId === null || !TRACE_ID.test(traceId) || traceId === ZERO_TRACE) return "span with an invalid trace id";
  if (spanId === null || !SPAN_ID.test(spanId) || !isSpanId(spanId)) return "span with an invalid span id";
  const parent = hexId(s.parentSpanId);
  const startMs = nanosToMs(s.startTimeUnixNano);
  const endMs = nanosToMs(s.endTimeUnixNano);
  if (startMs === null || endMs === null || endMs < startMs) return `span ${spanId}: invalid start or end time`;
  const code = Number(isObject(s.status) ? (s.status.code ?? 0) : 0);
  return {
    traceId,
    spanId,
    parentSpanId: parent && SPAN_ID.test(parent) && isSpanId(parent) ? parent : null,
    name: typeof s.name === "string" ? s.name.slice(0, 256) : "",
    startMs,
    endMs,
    statusCode: code === 1 || code === 2 ? code : 0,
    statusMessage: isObject(s.status) && typeof s.status.message === "string" ? s.status.message.slice(0, 1024) : "",
    attributes,
    project: null,
    python: false,
  };
}

const isSpanId = (id: string) => id.length === 16 && id !== ZERO_SPAN;

/** An id in OTLP/JSON's hex as lower-case hex; null when absent. */
function hexId(v: unknown): string | null {
  if (typeof v === "string") return v === "" ? null : v.toLowerCase();
  return null;
}

/** Nanoseconds since the epoch (number or decimal string) to epoch ms; null when not a plausible time. */
function nanosToMs(v: unknown): number | null {
  const n = typeof v === "number" ? v : typeof v === "string" && /^\d{1,20}$/.test(v) ? Number(v) : Number.NaN;
  if (!Number.isFinite(n) || n <= 0) return null;
  return n / 1e6;
}

/** The attributes in `keys`, as the protobuf reader keeps them. */
function attributes(kvs: unknown, keys: AttributeKeys): Attrs {
  const out: Attrs = {};
  for (const kv of list(kvs)) {
    if (!isObject(kv)) continue;
    const { key, value } = kv as PbKeyValue;
    if (typeof key !== "string" || key === "" || key.length > 256 || !keys.has(key)) continue;
    out[key] = anyValue(value, 0);
  }
  return out;
}

function anyValue(v: PbAnyValue | undefined, depth: number): AttrValue {
  if (!isObject(v) || depth > MAX_VALUE_DEPTH) return null;
  if (typeof v.stringValue === "string") return v.stringValue.length > MAX_STRING ? v.stringValue.slice(0, MAX_STRING) : v.stringValue;
  if (typeof v.boolValue === "boolean") return v.boolValue;
  if (v.intValue !== undefined) {
    const n = Number(v.intValue);
    return Number.isFinite(n) ? n : null;
  }
  if (v.doubleValue !== undefined) {
    const n = Number(v.doubleValue);
    return Number.isFinite(n) ? n : null;
  }
  if (isObject(v.arrayValue)) return list(v.arrayValue.values).map((x) => anyValue(x as PbAnyValue, depth + 1));
  if (isObject(v.kvlistValue)) {
    const o: { [key: string]: AttrValue } = {};
    for (const kv of list(v.kvlistValue.values)) {
      if (isObject(kv) && typeof kv.key === "string") o[kv.key] = anyValue((kv as PbKeyValue).value, depth + 1);
    }
    return o;
  }
  return null;
}

const isObject = (v: unknown): v is Record<string, unknown> & object => v !== null && typeof v === "object" && !Array.isArray(v);
const list = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);
