import { gzipSync } from "node:zlib";
import type { SpanStatusCode } from "@opentelemetry/api";
import type { ReadableSpan } from "@opentelemetry/sdk-trace-base";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { DomainError } from "../../src/errors.js";
import { decodeTraces } from "../../src/otlp/decode.js";
import { decodeExportResponse, decodeRpcStatus } from "../../src/otlp/proto.js";
import { Hono } from "hono";
import { readBodyBytes } from "../../src/http/body.js";
import { IN_FLIGHT_BODY_LIMITS, MAX_CONCURRENT_EXPORTS } from "../../src/otlp/admission.js";
import { otlpState } from "../../src/otlp/receive.js";
import { ACME, AUTH_YAML, countOf, OPS, READER } from "../ingest/helpers.js";
import { useTestApp } from "../support/app.js";
import { jsonBody, protobufBody, SpanScript } from "./support.js";

const PATH = "/v1/otlp/v1/traces";

/** A small genuine export request: a session span, a committed user turn and an unmapped eou span. */
function sampleSpans() {
  const script = new SpanScript();
  const t0 = Date.now() - 10_000;
  const session = script.start("agent_session", t0, { "gen_ai.conversation.id": "RM_http" });
  const turn = script.start("user_turn", t0 + 10, { "gen_ai.request.model": "nova-3", "gen_ai.provider.name": "deepgram" }, session);
  script.start("user_speaking", t0 + 10, {}, turn).end(t0 + 1010);
  script.start("eou_detection", t0 + 1010, {}, turn).end(t0 + 1020);
  turn.end(t0 + 1100);
  session.end(t0 + 2000);
  return script.take();
}

describe("POST /v1/otlp/v1/traces: OTLP/HTTP answers", () => {
  const t = useTestApp({ yaml: `${AUTH_YAML}\nserve:\n  body_limit_bytes: 65536\n` });
  const post = (body: Uint8Array | string, headers: Record<string, string>, key: string | null = ACME) =>
    t.call("POST", PATH, { key: key ?? undefined, raw: body, headers });
  const proto = { "content-type": "application/x-protobuf" };
  /** The google.rpc.Status of an error answer, in the request's encoding (OTLP/HTTP "Failures"). */
  const rpcStatus = async (res: Response, json = false) => {
    expect(res.headers.get("content-type")).toBe(json ? "application/json" : "application/x-protobuf");
    return json ? ((await res.json()) as { code: number; message: string }) : decodeRpcStatus(new Uint8Array(await res.arrayBuffer()));
  };

  it("401 without a key, 403 for a key without the ingest scope", async () => {
    const body = protobufBody(sampleSpans());
    const anonymous = await post(body, proto, null);
    expect(anonymous.status).toBe(401);
    expect(await rpcStatus(anonymous)).toMatchObject({ code: 16 });
    expect((await post(body, proto, "nope-not-a-key")).status).toBe(401);
    const reader = await post(body, proto, READER);
    expect(reader.status).toBe(403);
    expect(await rpcStatus(reader)).toMatchObject({ code: 7, message: expect.stringContaining("scope") });
  });

  it("200 with an empty ExportTraceServiceResponse in protobuf, counts unmapped spans in /v1/metrics", async () => {
    const before = await countOf(t.services.database.db, "requests");
    const res = await post(protobufBody(sampleSpans()), proto);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("application/x-protobuf");
    const answer = decodeExportResponse(new Uint8Array(await res.arrayBuffer()));
    expect(answer).toEqual({});
    expect(await countOf(t.services.database.db, "requests")).toBe(before + 1);
    const metrics = await (await t.call("GET", "/v1/metrics", { key: OPS })).text();
    expect(metrics).toContain('voxgate_otlp_spans_unmapped_total{span="eou_detection"} 1');
    expect(metrics).toMatch(/voxgate_otlp_spans_received_total \d+/);
  });

  it("accepts gzip (OTEL_EXPORTER_OTLP_COMPRESSION=gzip) and OTLP/JSON", async () => {
    const gz = await post(gzipSync(protobufBody(sampleSpans())), { ...proto, "content-encoding": "gzip" });
    expect(gz.status).toBe(200);
    const json = await post(jsonBody(sampleSpans()), { "content-type": "application/json" });
    expect(json.status).toBe(200);
    expect(await json.json()).toEqual({});
  });

  it("partial_success names the spans refused (bad ids), the others are stored", async () => {
    const body = JSON.parse(new TextDecoder().decode(jsonBody(sampleSpans())));
    const spans = body.resourceSpans[0].scopeSpans[0].spans;
    spans.push({ ...spans[0], traceId: "not-hex", spanId: "0102030405060708" });
    const res = await post(JSON.stringify(body), { "content-type": "application/json" });
    expect(res.status).toBe(200);
    const answer = await res.json();
    expect(answer.partialSuccess.rejectedSpans).toBe("1");
    expect(answer.partialSuccess.errorMessage).toContain("invalid trace id");
  });

  it("400 for an undecodable body, 415 for another content type, 413 over the limit", async () => {
    const good = protobufBody(sampleSpans());
    const truncated = await post(good.slice(0, good.length - 7), proto);
    expect(truncated.status).toBe(400);
    expect(await rpcStatus(truncated)).toMatchObject({ code: 3, message: expect.stringContaining("undecodable OTLP protobuf") });
    const badJson = await post("{not json", { "content-type": "application/json" });
    expect(badJson.status).toBe(400);
    expect(await rpcStatus(badJson, true)).toMatchObject({ code: 3, message: expect.stringContaining("undecodable OTLP JSON") });
    expect((await post(new Uint8Array([0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f, 0x01]), proto)).status).toBe(400);
    expect((await post("{not json", { "content-type": "application/json" })).status).toBe(400);
    expect((await post("[]", { "content-type": "application/json" })).status).toBe(400);
    expect((await post(good, { "content-type": "text/plain" })).status).toBe(415);
    expect((await post(new Uint8Array(70_000), proto)).status).toBe(413);
  });

  it("429 with Retry-After while the write path is saturated", async () => {
    const state = otlpState(t.services);
    state.inFlight = MAX_CONCURRENT_EXPORTS;
    try {
      const res = await post(protobufBody(sampleSpans()), proto);
      expect(res.status).toBe(429);
      expect(res.headers.get("retry-after")).toBe("1");
      expect(await rpcStatus(res)).toMatchObject({ code: 8 });
    } finally {
      state.inFlight = 0;
    }
  });

  it("admits exports by count and by the bytes of their bodies; 429 past either, and each releases what it held", async () => {
    const state = otlpState(t.services);
    const budget = IN_FLIGHT_BODY_LIMITS * 65536;
    const body = protobufBody(sampleSpans());
    const gz = gzipSync(body);
    const sized = { ...proto, "content-length": String(body.length) };
    const gzipped = { ...proto, "content-encoding": "gzip", "content-length": String(gz.length) };
    const expectAt = async (bytesInFlight: number, send: () => Promise<Response>, status: number) => {
      state.inFlightBytes = bytesInFlight;
      const res = await send();
      expect(res.status).toBe(status);
      if (status === 429) expect(res.headers.get("retry-after")).toBe("1");
      expect(state.inFlightBytes).toBe(bytesInFlight);
      expect(state.inFlight).toBe(0);
    };
    try {
      // The last free place, then none.
      state.inFlight = MAX_CONCURRENT_EXPORTS - 1;
      expect((await post(body, sized)).status).toBe(200);
      expect(state.inFlight).toBe(MAX_CONCURRENT_EXPORTS - 1);
      state.inFlight = MAX_CONCURRENT_EXPORTS;
      expect((await post(body, sized)).status).toBe(429);
      state.inFlight = 0;
      // A declared length is held from admission; a body without one, or compressed, as it is read
      // (inflated): room for exactly the body passes, a byte less is refused.
      for (const [send, size] of [
        [() => post(body, sized), body.length],
        [() => post(body, proto), body.length],
        [() => post(gz, gzipped), body.length],
      ] as const) {
        await expectAt(budget - size, send, 200);
        await expectAt(budget - size + 1, send, 429);
      }
    } finally {
      state.inFlight = 0;
      state.inFlightBytes = 0;
    }
  });

  it("fuzz over HTTP: truncated and bit-flipped exports answer 200 or 400, never 500", async () => {
    const good = protobufBody(sampleSpans());
    await fc.assert(
      fc.asyncProperty(fc.nat({ max: good.length }), fc.nat({ max: good.length - 1 }), fc.nat({ max: 255 }), async (cut, at, byte) => {
        const body = good.slice(0, cut);
        if (at < body.length) body[at] = byte;
        const res = await post(body, proto);
        expect([200, 400]).toContain(res.status);
      }),
      { numRuns: 60 },
    );
  });
});

describe("decodeTraces (fuzz)", () => {
  const good = protobufBody(sampleSpans());
  const decodeOrRefuse = (bytes: Uint8Array, type = "application/x-protobuf") => {
    try {
      decodeTraces(bytes, type);
    } catch (err) {
      expect(err).toBeInstanceOf(DomainError);
    }
  };

  it("protobuf and OTLP/JSON of the same spans decode alike, refused ones included (bad ids, times)", () => {
    const spans = sampleSpans();
    const [a, b, c] = spans as [ReadableSpan, ReadableSpan, ReadableSpan];
    const withContext = (s: ReadableSpan, ctx: Partial<ReturnType<ReadableSpan["spanContext"]>>, extra: Partial<ReadableSpan> = {}): ReadableSpan =>
      ({ ...s, spanContext: () => ({ ...s.spanContext(), ...ctx }), ...extra }) as ReadableSpan;
    const broken = [
      withContext(a, { traceId: "0".repeat(32) }),
      withContext(b, { spanId: "0".repeat(16) }),
      withContext(c, {}, { endTime: [c.startTime[0] - 5, 0] }),
      withContext(c, {}, { parentSpanContext: { ...c.spanContext(), spanId: "0".repeat(16) }, status: { code: 7 as SpanStatusCode } }),
    ];
    const all = [...spans, ...broken];
    const fromProtobuf = decodeTraces(protobufBody(all), "application/x-protobuf");
    expect(fromProtobuf.rejected).toBe(3);
    expect(fromProtobuf.firstRejection).toBe("span with an invalid trace id");
    expect(decodeTraces(jsonBody(all), "application/json")).toEqual(fromProtobuf);
    const kept = fromProtobuf.batches[0]?.spans.at(-1);
    expect(kept).toMatchObject({ parentSpanId: null, statusCode: 0 });
  });

  it("arbitrary bytes never throw anything but a 400", () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 2048 }), (bytes) => decodeOrRefuse(bytes)),
      { numRuns: 2000 },
    );
  });

  it("every truncation and byte mutation of a genuine export is decoded or refused", () => {
    for (let cut = 0; cut <= good.length; cut++) decodeOrRefuse(good.slice(0, cut));
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.nat({ max: good.length - 1 }), fc.nat({ max: 255 })), { minLength: 1, maxLength: 8 }), (edits) => {
        const body = good.slice();
        for (const [at, byte] of edits) body[at] = byte;
        decodeOrRefuse(body);
      }),
      { numRuns: 2000 },
    );
  });

  it("lengths that lie (huge varints, deep nesting) are refused without hanging", () => {
    // A length-delimited field claiming 2^35 bytes.
    decodeOrRefuse(new Uint8Array([0x0a, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01, 0x00]));
    // 20,000 nested ResourceSpans.resource → attributes → ... as empty length-delimited fields.
    const deep = new Uint8Array(40_000).map((_, i) => (i % 2 === 0 ? 0x0a : 0x00));
    decodeOrRefuse(deep);
    // Nested AnyValue arrays 5,000 deep in one attribute, built inside out.
    let value: Uint8Array = new Uint8Array([0x0a, 0x00]);
    for (let i = 0; i < 5000; i++) value = wrap(0x2a, wrap(0x0a, value));
    decodeOrRefuse(wrap(0x0a, wrap(0x12, wrap(0x12, wrap(0x4a, wrap(0x12, value))))));
    decodeOrRefuse(new TextEncoder().encode("[".repeat(100_000)), "application/json");
  });
});

/** A length-delimited protobuf field: tag, varint length, bytes. */
function wrap(tag: number, inner: Uint8Array): Uint8Array {
  const len: number[] = [];
  let n = inner.length;
  while (n > 0x7f) {
    len.push((n & 0x7f) | 0x80);
    n >>>= 7;
  }
  len.push(n);
  const out = new Uint8Array(1 + len.length + inner.length);
  out[0] = tag;
  out.set(len, 1);
  out.set(inner, 1 + len.length);
  return out;
}

describe("readBodyBytes: what the receiver's budget is told, and when", () => {
  // What `held` was told, in order, for a body of `size` bytes sent with these headers.
  const app = new Hono().post("/", async (c) => {
    const told: number[] = [];
    try {
      await readBodyBytes(c, 8192, (bytes) => told.push(bytes));
    } catch (err) {
      return c.json({ refused: err instanceof DomainError ? err.code : String(err), told });
    }
    return c.json(told);
  });
  const told = async (body: Uint8Array, headers: Record<string, string>) =>
    (await app.request("/", { method: "POST", body: body as Uint8Array<ArrayBuffer>, headers })).json();
  const bytes = new Uint8Array(1200);

  it("a declared length sent as is before a byte is read (the body then read whole), else the bytes as they are read (inflated)", async () => {
    expect(await told(bytes, { "content-length": "1200" })).toEqual([1200]);
    expect(await told(bytes, { "content-length": "1200", "content-encoding": "identity" })).toEqual([1200]);
    expect(await told(bytes, {})).toEqual([1200]);
    expect(await told(new Uint8Array(gzipSync(bytes)), { "content-encoding": "gzip" })).toEqual([1200]);
    expect(await told(new Uint8Array(0), { "content-length": "0" })).toEqual([]);
    // Over the limit: refused before the budget hears of it.
    expect(await told(bytes, { "content-length": "99999" })).toEqual({ refused: "payload_too_large", told: [] });
  });
});
