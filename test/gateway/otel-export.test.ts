import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseEnv, traceExportOf } from "../../src/config/env.js";
import { useTestApp } from "../support/app.js";
import { openaiChatStub, STREAM_PIECES } from "../support/stubs/openai-chat.js";
import { OtlpCollector } from "../support/stubs/otlp-collector.js";
import type { StubServer } from "../support/stubs/stub-server.js";
import { ACME_KEY, openaiChatYaml, OPERATOR_KEY, recordedRows } from "./support.js";

/**
 * Voxgate's own calls as GenAI client spans: Voxgate configured by the standard OTel variables only,
 * exporting to a real loopback OTLP/HTTP collector that decodes the protobuf with Voxgate's own
 * receiver decoder; calls made with the OpenAI SDK carrying the agent's W3C traceparent.
 */

let stub: StubServer;
let collector: OtlpCollector;

beforeAll(async () => {
  stub = await openaiChatStub().start();
  collector = await new OtlpCollector().start();
});
afterAll(async () => {
  await stub?.close();
  await collector?.close();
});
const app = useTestApp(() => ({
  listen: true,
  yaml: openaiChatYaml(stub.url),
  env: { OTEL_EXPORTER_OTLP_ENDPOINT: `${collector.url}/`, OTEL_EXPORTER_OTLP_HEADERS: "authorization=Bearer%20collector-token", OTEL_SERVICE_NAME: "voxgate-edge" },
}));

const TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736";
const PARENT_SPAN = "00f067aa0ba902b7";
const PROMPT = "my account number is 9911-SECRET";
const client = (key: string, headers: Record<string, string> = {}) =>
  new OpenAI({ apiKey: key, baseURL: `${app.base}/openai/v1`, maxRetries: 0, defaultHeaders: headers });

describe("gateway calls exported as GenAI spans", () => {
  it("joins the caller's trace with a client span carrying usage, TTFB, cost, project, tenant and request id, and no content", async () => {
    const traced = client(ACME_KEY, { traceparent: `00-${TRACE_ID}-${PARENT_SPAN}-01`, tracestate: "vendor=abc", "x-voxgate-project": "support", "x-voxgate-session": "room-7" });
    const { data: stream, response } = await traced.chat.completions.create({ model: "openai/gpt-4.1-mini", stream: true, messages: [{ role: "user", content: PROMPT }] }).withResponse();
    for await (const _ of stream) {
      // the answer is relayed; the span is made from the record
    }
    const id = response.headers.get("x-voxgate-request-id");
    const row = (await recordedRows(app)).find((r) => r.id === id);
    const span = collector.spans.find((s) => s.attributes["voxgate.request_id"] === id);
    expect(span).toMatchObject({ traceId: TRACE_ID, parentSpanId: PARENT_SPAN, name: "chat gpt-4.1-mini", statusCode: 0 });
    expect(span?.attributes).toMatchObject({
      "gen_ai.operation.name": "chat",
      "gen_ai.provider.name": "openai",
      "gen_ai.request.model": "gpt-4.1-mini",
      "gen_ai.usage.input_tokens": 12,
      "gen_ai.usage.output_tokens": 5,
      "gen_ai.usage.cache_read.input_tokens": 4,
      "gen_ai.conversation.id": "room-7",
      "voxgate.project": "support",
      "voxgate.tenant": "acme",
      "voxgate.model_id": "openai/gpt-4.1-mini",
      "voxgate.provider": "openai",
    });
    expect(span?.attributes["voxgate.cost_usd"]).toBe(Number(row?.cost_usd));
    expect(span?.attributes["gen_ai.response.time_to_first_chunk"]).toBe((row?.ttfb_ms ?? 0) / 1000);
    expect(span?.attributes["error.type"]).toBeUndefined();
    expect(span?.resource["service.name"]).toBe("voxgate-edge");
    expect(span?.endMs).toBeGreaterThanOrEqual(span?.startMs ?? Number.POSITIVE_INFINITY);
    // The standard header variable reached the collector, percent-decoded.
    expect(collector.exports.at(-1)?.headers.authorization).toBe("Bearer collector-token");
    // Neither the prompt nor the answer is anywhere in what was exported.
    const wire = Buffer.concat(collector.exports.map((e) => e.body)).toString("latin1");
    expect(wire).not.toContain("9911-SECRET");
    expect(wire).not.toContain(STREAM_PIECES.join(""));
  });

  it("starts a new trace when the caller sends none (or a malformed one), and types a failed call's error", async () => {
    stub.script({ status: 503 });
    const failed = await client(OPERATOR_KEY, { traceparent: "00-not-a-trace-01" })
      .chat.completions.create({ model: "openai/gpt-4.1-mini", messages: [{ role: "user", content: "hi" }] })
      .withResponse()
      .catch((err: { headers?: Headers }) => ({ response: { headers: err.headers } }));
    const failedId = failed.response.headers?.get("x-voxgate-request-id");
    const { response } = await client(OPERATOR_KEY).chat.completions.create({ model: "openai/gpt-4.1-mini", messages: [{ role: "user", content: "hi" }] }).withResponse();
    await recordedRows(app);
    const error = collector.spans.find((s) => s.attributes["voxgate.request_id"] === failedId);
    expect(error).toMatchObject({ parentSpanId: null, statusCode: 2 });
    expect(error?.traceId).not.toBe(TRACE_ID);
    expect(error?.attributes).toMatchObject({ "error.type": "503", "voxgate.project": "default", "voxgate.status": "error" });
    expect(error?.attributes["voxgate.tenant"]).toBeUndefined();
    const ok = collector.spans.find((s) => s.attributes["voxgate.request_id"] === response.headers.get("x-voxgate-request-id"));
    expect(ok).toMatchObject({ parentSpanId: null, statusCode: 0 });
    expect(ok?.traceId).toMatch(/^[0-9a-f]{32}$/);
  });
});

describe("with the variables unset", () => {
  it("reads no export, and only genai-spans.ts imports the SDK, and nothing imports it statically", () => {
    expect(traceExportOf(parseEnv({}))).toBeNull();
    expect(traceExportOf(parseEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318", OTEL_SDK_DISABLED: "true" }))).toBeNull();
    expect(traceExportOf(parseEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318/", OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "http://t:4318/traces", OTEL_EXPORTER_OTLP_HEADERS: "a=1,b=x%20y", OTEL_EXPORTER_OTLP_TRACES_HEADERS: "a=2" }))).toEqual({
      url: "http://t:4318/traces",
      headers: { a: "2", b: "x y" },
      serviceName: "voxgate",
    });
    const src = join(import.meta.dirname, "../../src");
    const files = readdirSync(src, { recursive: true, encoding: "utf8" }).filter((f) => f.endsWith(".ts"));
    const importsSdk = files.filter((f) => /from "@opentelemetry\//.test(readFileSync(join(src, f), "utf8")));
    expect(importsSdk).toEqual([join("gateway", "genai-spans.ts")]);
    const staticImporters = files.filter((f) => /from "[./]+(gateway\/)?genai-spans\.js"/.test(readFileSync(join(src, f), "utf8")));
    expect(staticImporters).toEqual([]);
  });
});
