import { connect, type Socket } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { KEYS_YAML, OPERATOR_KEY, PROVIDER_KEY } from "../gateway/support.js";
import { useTestApp } from "../support/app.js";
import { openaiChatStub } from "../support/stubs/openai-chat.js";
import type { StubServer } from "../support/stubs/stub-server.js";

/**
 * One request must not hold the server: bodies that take JSON.parse or the multipart reader seconds
 * (deep nesting, millions of values, 160k parts) are refused by a scan that allocates nothing, and
 * clients that trickle their head or body are cut by the header timeout and the minimum body rate.
 * Each attack goes over a real socket; the vendor must never see it.
 */
let stub: StubServer;
beforeAll(async () => {
  stub = await openaiChatStub().start();
});
afterAll(async () => {
  await stub?.close();
});
const app = useTestApp(() => ({
  listen: true,
  yaml: `${KEYS_YAML}
providers:
  openai: { api_key: "${PROVIDER_KEY}", base_url: "${stub.url}/v1" }
models:
  llm:
    openai/gpt-4.1-mini: { provider: openai, model: gpt-4.1-mini }
  stt:
    openai/whisper-1: { provider: openai, model: whisper-1 }
serve:
  headers_timeout_ms: 1000
  request_timeout_ms: 4000
  min_body_bytes_per_second: 2000
  body_rate_window_ms: 500
`,
}));

const NEAR_LIMIT = 8 * 1024 * 1024 - 1024;

async function post(path: string, body: string, type = "application/json") {
  const res = await fetch(`${app.base}${path}`, { method: "POST", headers: { authorization: `Bearer ${OPERATOR_KEY}`, "content-type": type }, body });
  return { status: res.status, text: await res.text() };
}

describe("bodies that would cost seconds of parsing are refused before parsing", () => {
  it("8 MiB of nested [ on chat completions: 400 naming the depth bound, the vendor never called", async () => {
    const before = stub.hits.length;
    const a = await post("/openai/v1/chat/completions", "[".repeat(NEAR_LIMIT));
    expect(a.status).toBe(400);
    expect(a.text).toContain("nested deeper than 64");
    const b = await post("/openai/v1/chat/completions", `{"model":"openai/gpt-4.1-mini","messages":${"[".repeat(NEAR_LIMIT - 100)}`);
    expect(b.status).toBe(400);
    expect(b.text).toContain("nested deeper than 64");
    expect(stub.hits.length).toBe(before);
  });

  it("millions of values on chat completions and on a management route: 400 naming the value bound", async () => {
    const many = `{"model":"openai/gpt-4.1-mini","messages":[],"x":[${"0,".repeat(NEAR_LIMIT / 2 - 100)}0]}`;
    const a = await post("/openai/v1/chat/completions", many);
    expect(a.status).toBe(400);
    expect(a.text).toContain("more than 500000 values");
    const b = await post("/v1/projects", `{"id":"p1","x":[${"0,".repeat(NEAR_LIMIT / 2 - 100)}0]}`);
    expect(b.status).toBe(400);
    expect(b.text).toContain("more than 500000 values");
  });

  it("a transcription upload of 160k tiny multipart parts: 400 naming the part bound", async () => {
    const boundary = "b";
    const part = `--${boundary}\r\nContent-Disposition: form-data; name="x"\r\n\r\n1\r\n`;
    const body = `${part.repeat(160_000)}--${boundary}--\r\n`;
    expect(body.length).toBeLessThan(NEAR_LIMIT);
    const a = await post("/openai/v1/audio/transcriptions", body, `multipart/form-data; boundary=${boundary}`);
    expect(a.status).toBe(400);
    expect(a.text).toContain("more than 100 parts");
    const head = `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="a.wav"\r\nX-Pad: ${"a".repeat(20_000)}\r\n\r\nRIFF\r\n--${boundary}--\r\n`;
    const c = await post("/openai/v1/audio/transcriptions", head, `multipart/form-data; boundary=${boundary}`);
    expect(c.status).toBe(400);
    expect(c.text).toContain("headers exceed");
  });

  it("ordinary nesting and sizes still pass", async () => {
    const nested = { model: "openai/gpt-4.1-mini", messages: [{ role: "user", content: `he said "\\"[[[[" ${"{".repeat(200)}` }], metadata: { a: { b: { c: [[[[1]]]] } } } };
    const a = await post("/openai/v1/chat/completions", JSON.stringify(nested));
    expect(a.status, a.text).toBe(200);
  });
});

/** Opens a raw socket to the app and resolves with how it ended: closed by the server, or still open at `waitMs`. */
function rawClient(write: (s: Socket) => void): Promise<{ closedByServer: boolean; received: string }> {
  return new Promise((resolve) => {
    const url = new URL(app.base);
    const socket = connect(Number(url.port), url.hostname, () => write(socket));
    let received = "";
    socket.on("data", (d) => {
      received += d.toString();
    });
    socket.on("error", () => {});
    socket.on("close", () => resolve({ closedByServer: true, received }));
  });
}

describe("slow clients are cut (header timeout, minimum body rate, request timeout)", () => {
  it("a head that never ends is closed by the header timeout", async () => {
    const r = await rawClient((s) => s.write(`POST /v1/ingest HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: 1\r\n`));
    expect(r.closedByServer).toBe(true);
  });

  it("50 bodies trickled a few bytes at a time are all closed, and the server still answers", async () => {
    const trickle = (path: string) =>
      rawClient((s) => {
        s.write(`POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${OPERATOR_KEY}\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{"model":`);
        const t = setInterval(() => (s.destroyed ? clearInterval(t) : s.write(" ")), 100);
        s.on("close", () => clearInterval(t));
      });
    const all = await Promise.all(Array.from({ length: 50 }, (_, i) => trickle(i % 2 ? "/openai/v1/chat/completions" : "/v1/ingest")));
    expect(all.every((r) => r.closedByServer)).toBe(true);
    const health = await fetch(`${app.base}/health`);
    expect(health.status).toBe(200);
  }, 30_000);
});
