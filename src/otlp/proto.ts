import { createRequire } from "node:module";
import type * as Protobuf from "protobufjs";
import type { FreshSpan } from "./map.js";
import type { Attrs, AttrValue } from "./spans.js";

type Reader = Protobuf.Reader;

/*
 * The receiver's protobuf messages. The request (ExportTraceServiceRequest, opentelemetry-proto v1.x:
 * common/v1/common.proto, resource/v1/resource.proto, trace/v1/trace.proto,
 * collector/trace/v1/trace_service.proto) is read field by field by readExportRequest below, with
 * those files' field numbers and wire types; fields it does not name (span events and links, schema
 * URLs, trace state, flags, the scope) are skipped by wire type, as any protobuf reader skips unknown
 * fields. The answers are encoded by protobufjs from this JSON descriptor.
 */
const descriptor = {
  nested: {
    otlp: {
      nested: {
        ExportTracePartialSuccess: { fields: { rejectedSpans: { type: "int64", id: 1 }, errorMessage: { type: "string", id: 2 } } },
        ExportTraceServiceResponse: { fields: { partialSuccess: { type: "ExportTracePartialSuccess", id: 1 } } },
        // google.rpc.Status (google/rpc/status.proto), without its details: the body of every 4xx/5xx.
        RpcStatus: { fields: { code: { type: "int32", id: 1 }, message: { type: "string", id: 2 } } },
      },
    },
  },
};

interface Protobufs {
  Reader: typeof Protobuf.Reader;
  ExportTraceServiceResponse: Protobuf.Type;
  RpcStatus: Protobuf.Type;
}
let protobufs: Protobufs | null = null;

/**
 * protobufjs (a CommonJS package of ~45 modules) and the answers' message types, required on first
 * use: a server answers /health without loading them (docs/perf/startup.md); src/server.ts calls this
 * a second after listening, so the first OTLP export does not pay for it unless it comes sooner.
 */
export function loadProtobufs(): Protobufs {
  if (!protobufs) {
    const protobuf = createRequire(import.meta.url)("protobufjs") as typeof Protobuf;
    const root = protobuf.Root.fromJSON(descriptor);
    protobufs = { Reader: protobuf.Reader, ExportTraceServiceResponse: root.lookupType("otlp.ExportTraceServiceResponse"), RpcStatus: root.lookupType("otlp.RpcStatus") };
  }
  return protobufs;
}

/** A google.rpc.Status, protobuf-encoded. */
export function encodeRpcStatus(code: number, message: string): Uint8Array {
  const { RpcStatus } = loadProtobufs();
  return RpcStatus.encode(RpcStatus.fromObject({ code, message })).finish();
}

/** Decodes a google.rpc.Status (tests read the receiver's error answers with it). */
export function decodeRpcStatus(bytes: Uint8Array): { code: number; message: string } {
  const { RpcStatus } = loadProtobufs();
  const o = RpcStatus.toObject(RpcStatus.decode(bytes), { defaults: true }) as { code: number; message: string };
  return { code: o.code, message: o.message };
}

/** Decodes an ExportTraceServiceResponse to its plain object (tests read the receiver's answers with it). */
export function decodeExportResponse(bytes: Uint8Array): Record<string, unknown> {
  const { ExportTraceServiceResponse } = loadProtobufs();
  return ExportTraceServiceResponse.toObject(ExportTraceServiceResponse.decode(bytes));
}

/** Plain shapes of the request's messages: OTLP/JSON's as parsed, and the protobuf reader's spans (ids in hex, times as numbers). */
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
  traceId?: string;
  spanId?: string;
  parentSpanId?: string;
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
 * A span as read off the wire, in the receiver's own shape (src/otlp/map.ts FreshSpan, project and
 * runtime still unset) but not yet checked (decode.ts): ids in hex ("" when absent), times in epoch ms
 * (0 when absent), the name and status as sent, and the attributes asked for.
 */
export type WireSpan = FreshSpan;

/** One ResourceSpans: the resource's attributes asked for and its spans (of every scope). */
export interface WireResourceSpans {
  resource: Attrs;
  spans: WireSpan[];
}

/** Which attribute keys the reader decodes (the receiver: the ones mapping reads). */
export type AttributeKeys = Pick<ReadonlySet<string>, "has">;
/** Every attribute: for a collector that shows spans whole (the tests' loopback collector). */
export const ALL_ATTRIBUTES: AttributeKeys = { has: () => true };

/**
 * Reads an ExportTraceServiceRequest (field numbers of opentelemetry-proto, as the descriptor above)
 * straight into the receiver's shapes with protobufjs' Reader: no message objects, no toObject copy,
 * times as plain numbers, and only the attributes in `keys` decoded (the others, message contents
 * among them, are skipped unread). Every read is bounds-checked by the Reader, and every nested
 * message's length against the bytes left, so a truncated or lying body throws (the caller answers
 * 400). Fields of another wire type than the proto's are skipped as unknown ones.
 */
export function readExportRequest(bytes: Uint8Array, keys: AttributeKeys): WireResourceSpans[] {
  // A Buffer gets protobufjs' BufferReader (strings through Buffer#utf8Slice).
  const r = loadProtobufs().Reader.create(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength));
  const out: WireResourceSpans[] = [];
  const last: LastTrace = { at: 0, end: 0, hex: "" };
  while (r.pos < r.len) {
    const tag = r.uint32();
    if (tag === LEN(1)) out.push(readResourceSpans(r, nestedEnd(r), keys, last));
    else r.skipType(tag & 7);
  }
  return out;
}

/** The tag of a length-delimited field; VARINT / I64 tags of the others. */
const LEN = (field: number) => (field << 3) | 2;
const VARINT = (field: number) => field << 3;
const I64 = (field: number) => (field << 3) | 1;

/** Where the nested message starting here ends; a length past the body throws. */
function nestedEnd(r: Reader): number {
  const end = r.uint32() + r.pos;
  if (end > r.len) throw new RangeError(`length past the end at offset ${r.pos}`);
  return end;
}

/** A nested message's fields must end exactly at its length. */
function ended(r: Reader, end: number): void {
  if (r.pos !== end) throw new RangeError(`field past its message's end at offset ${r.pos}`);
}

/**
 * The last trace id read in this request (where its bytes sit, and its hex): an exporter sends a
 * trace's spans together, so most spans' trace id is the one before, kept as one string. The spans
 * of an export wait for a writer while other exports are read: each id string they hold is one more
 * object every young-generation collection copies.
 */
interface LastTrace {
  at: number;
  end: number;
  hex: string;
}

function readResourceSpans(r: Reader, end: number, keys: AttributeKeys, last: LastTrace): WireResourceSpans {
  const out: WireResourceSpans = { resource: {}, spans: [] };
  while (r.pos < end) {
    const tag = r.uint32();
    if (tag === LEN(1)) {
      // Resource: its attributes (field 1); the dropped count is skipped.
      const resourceEnd = nestedEnd(r);
      out.resource = {};
      while (r.pos < resourceEnd) {
        const t = r.uint32();
        if (t === LEN(1)) readKeyValue(r, nestedEnd(r), keys, out.resource);
        else r.skipType(t & 7);
      }
      ended(r, resourceEnd);
    } else if (tag === LEN(2)) {
      // ScopeSpans: its spans (field 2); the scope and schema URL are skipped.
      const scopeEnd = nestedEnd(r);
      while (r.pos < scopeEnd) {
        const t = r.uint32();
        if (t === LEN(2)) out.spans.push(readSpan(r, nestedEnd(r), keys, last));
        else r.skipType(t & 7);
      }
      ended(r, scopeEnd);
    } else r.skipType(tag & 7);
  }
  ended(r, end);
  return out;
}

/** The attributes of a span that sends none (most LiveKit spans): one frozen object for all of them. */
const NO_ATTRIBUTES: Attrs = Object.freeze({});

function readSpan(r: Reader, end: number, keys: AttributeKeys, last: LastTrace): WireSpan {
  // Built whole, in one shape (the receiver's span: no message object, wrapper or copy per span).
  const span: WireSpan = {
    traceId: "",
    spanId: "",
    parentSpanId: null,
    name: "",
    startMs: 0,
    endMs: 0,
    statusCode: 0,
    statusMessage: "",
    attributes: NO_ATTRIBUTES,
    project: null,
    python: false,
  };
  while (r.pos < end) {
    const tag = r.uint32();
    if (tag === LEN(1)) span.traceId = traceHex(r, last);
    else if (tag === LEN(2)) span.spanId = hexBytes(r);
    else if (tag === LEN(4)) span.parentSpanId = hexBytes(r);
    else if (tag === LEN(5)) span.name = r.string();
    else if (tag === I64(7)) span.startMs = fixed64(r) / 1e6;
    else if (tag === I64(8)) span.endMs = fixed64(r) / 1e6;
    else if (tag === LEN(9)) {
      if (span.attributes === NO_ATTRIBUTES) span.attributes = {};
      readKeyValue(r, nestedEnd(r), keys, span.attributes);
    }
    else if (tag === LEN(15)) {
      const statusEnd = nestedEnd(r);
      while (r.pos < statusEnd) {
        const t = r.uint32();
        if (t === LEN(2)) span.statusMessage = r.string();
        else if (t === VARINT(3)) span.statusCode = r.int32();
        else r.skipType(t & 7);
      }
      ended(r, statusEnd);
    } else r.skipType(tag & 7);
  }
  ended(r, end);
  return span;
}

/** Whether buf[a, a + n) and buf[b, b + n) hold the same bytes (16 of them: a loop, cheaper than a native call). */
function sameBytes(buf: Uint8Array, a: number, b: number, n: number): boolean {
  for (let i = 0; i < n; i++) if (buf[a + i] !== buf[b + i]) return false;
  return true;
}

/** A trace id as hexBytes reads it: the string of the last one when the bytes are the same. */
function traceHex(r: Reader, last: LastTrace): string {
  const end = nestedEnd(r);
  const buf = r.buf as Buffer;
  if (end - r.pos === last.end - last.at && sameBytes(buf, last.at, r.pos, end - r.pos)) {
    r.pos = end;
    return last.hex;
  }
  last.at = r.pos;
  last.end = end;
  last.hex = buf.toString("hex", r.pos, end);
  r.pos = end;
  return last.hex;
}

/**
 * A bytes field as lower-case hex, read straight off the body (no Buffer view per id: three per span
 * showed in the receiver's CPU profile); decode.ts checks the length.
 */
function hexBytes(r: Reader): string {
  const end = nestedEnd(r);
  const hex = (r.buf as Buffer).toString("hex", r.pos, end);
  r.pos = end;
  return hex;
}

/** An unsigned 64-bit little-endian integer as a double (nanosecond times: exact to ~256 ns). */
function fixed64(r: Reader): number {
  const lo = r.fixed32();
  return r.fixed32() * 4294967296 + lo;
}

/** A KeyValue into `into` when its key is asked for; the value is read only then (it may come before the key). */
function readKeyValue(r: Reader, end: number, keys: AttributeKeys, into: Record<string, AttrValue>, depth = 0): void {
  let key: string | null = null;
  let valueAt = -1;
  let valueEnd = -1;
  while (r.pos < end) {
    const tag = r.uint32();
    if (tag === LEN(1)) key = r.string();
    else if (tag === LEN(2)) {
      valueEnd = nestedEnd(r);
      valueAt = r.pos;
      r.pos = valueEnd;
    } else r.skipType(tag & 7);
  }
  ended(r, end);
  if (key === null || key === "" || key.length > 256 || (depth === 0 && !keys.has(key))) return;
  if (valueAt < 0) {
    into[key] = null;
    return;
  }
  r.pos = valueAt;
  into[key] = readAnyValue(r, valueEnd, depth, keys);
  r.pos = end;
}

/** Attribute values nested deeper than this (arrays in kvlists in arrays…) are kept as null, unread. */
export const MAX_VALUE_DEPTH = 8;
/** Longest attribute string kept; longer ones are cut, mapping never needs them whole. */
export const MAX_STRING = 16 * 1024;

function readAnyValue(r: Reader, end: number, depth: number, keys: AttributeKeys): AttrValue {
  if (depth > MAX_VALUE_DEPTH) {
    r.pos = end;
    return null;
  }
  let value: AttrValue = null;
  while (r.pos < end) {
    const tag = r.uint32();
    if (tag === LEN(1)) {
      const v = r.string();
      value = v.length > MAX_STRING ? v.slice(0, MAX_STRING) : v;
    } else if (tag === VARINT(2)) value = r.bool();
    else if (tag === VARINT(3)) {
      const n = r.int64() as unknown as number | { toNumber(): number };
      value = typeof n === "number" ? n : n.toNumber();
    } else if (tag === I64(4)) {
      const n = r.double();
      value = Number.isFinite(n) ? n : null;
    } else if (tag === LEN(5)) {
      const arrayEnd = nestedEnd(r);
      const list: AttrValue[] = [];
      while (r.pos < arrayEnd) {
        const t = r.uint32();
        if (t === LEN(1)) {
          list.push(readAnyValue(r, nestedEnd(r), depth + 1, keys));
        } else r.skipType(t & 7);
      }
      ended(r, arrayEnd);
      value = list;
    } else if (tag === LEN(6)) {
      const kvEnd = nestedEnd(r);
      const o: { [key: string]: AttrValue } = {};
      while (r.pos < kvEnd) {
        const t = r.uint32();
        if (t === LEN(1)) readKeyValue(r, nestedEnd(r), keys, o, depth + 1);
        else r.skipType(t & 7);
      }
      ended(r, kvEnd);
      value = o;
    } else if (tag === LEN(7)) {
      r.skip(r.uint32());
      value = null; // bytes: nothing maps them
    } else r.skipType(tag & 7);
  }
  ended(r, end);
  return value;
}

/** The answer body, protobuf-encoded (partial_success only when something was rejected). */
export function encodeExportResponse(rejectedSpans: number, errorMessage: string): Uint8Array {
  const body = rejectedSpans > 0 || errorMessage ? { partialSuccess: { rejectedSpans, errorMessage } } : {};
  const { ExportTraceServiceResponse } = loadProtobufs();
  return ExportTraceServiceResponse.encode(ExportTraceServiceResponse.fromObject(body)).finish();
}
