import { request } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { WebSocket } from "ws";
import { GatewayPaths, policyRefusal } from "../../src/gateway/listener.js";
import { useTestApp } from "../support/app.js";
import { openaiChatStub } from "../support/stubs/openai-chat.js";
import type { StubServer } from "../support/stubs/stub-server.js";
import { openaiChatYaml, OPERATOR_KEY, recordedRows } from "./support.js";

/**
 * The gateway's one entry (src/gateway/listener.ts): which requests it owns, its URL policy (a path
 * is matched as sent: dot segments, backslashes and malformed percent-encoding refused in the
 * vendor's shape, never normalised) and the answers it gives without a route. The calls themselves
 * are covered by the vendor tests, which run through the same listener.
 */

const paths = new GatewayPaths();
const kind = (method: string, url: string) => {
  const m = paths.match(method, url);
  if (!m) return "not the gateway's";
  if (m.refused) return `400 ${m.protocol.id}`;
  if (!m.served) return `404 ${m.protocol.id}`;
  return m.served.kind === "ws" ? `ws ${m.protocol.id}` : `${m.served.route.kind} ${m.protocol.id}`;
};

describe("the gateway's paths", () => {
  it("owns every vendor prefix, the attribution prefix before one, and Cartesia's root routes; nothing else", () => {
    expect(kind("POST", "/openai/v1/chat/completions")).toBe("proxy openai");
    expect(kind("POST", "/openai/v1/chat/completions?x=1")).toBe("proxy openai");
    expect(kind("GET", "/openai/v1/models")).toBe("local openai");
    expect(kind("HEAD", "/openai/v1/models")).toBe("local openai");
    expect(kind("POST", "/openai/v1/models")).toBe("404 openai");
    expect(kind("GET", "/openai/v1/realtime")).toBe("ws openai");
    expect(kind("GET", "/deepgram/v1/listen")).toBe("ws deepgram");
    expect(kind("POST", "/deepgram/v1/listen")).toBe("proxy deepgram");
    expect(kind("POST", "/elevenlabs/v1/text-to-speech/voice-1/stream")).toBe("proxy elevenlabs");
    expect(kind("GET", "/elevenlabs/v1/text-to-speech/voice-1/stream-input")).toBe("ws elevenlabs");
    expect(kind("POST", "/gemini/v1beta/models/gemini-2.0-flash:generateContent")).toBe("proxy gemini");
    expect(kind("POST", "/gemini/v1beta/models/openai/gpt-4.1-mini:generateContent")).toBe("proxy gemini");
    expect(kind("POST", "/p/alpha/s/s-1/anthropic/v1/messages")).toBe("proxy anthropic");
    expect(kind("POST", "/tts/bytes")).toBe("proxy cartesia");
    expect(kind("GET", "/tts/websocket")).toBe("ws cartesia");
    // Under a prefix without a route (a trailing slash, another version, the bare prefix): the vendor's 404.
    for (const path of ["/openai/v1", "/openai/v1/", "/openai/v1/chat/completions/", "/openai/v1//chat/completions", "/openai/v1/chat%2Dcompletions", "/p/a/s/b/openai/v1/nope"]) {
      expect(kind("POST", path), path).toBe("404 openai");
    }
    for (const path of ["/v1/ingest", "/health", "/", "/openaix/v1/chat/completions", "/openai/v2/chat", "/p//s/x/openai/v1/chat/completions", "/p/a/s/b/v1/ingest", "/p/a/s/b/tts/bytes", "*", "http://x/openai/v1/chat/completions"]) {
      expect(kind("POST", path), path).toBe("not the gateway's");
    }
    expect(kind("GET", "/tts/bytes")).toBe("not the gateway's");
  });

  it("percent-decodes parameter values, never static parts", () => {
    expect(paths.match("POST", "/p/caf%C3%A9/s/a%2Fb/openai/v1/chat/completions")?.params).toEqual({ project: "café", session: "a/b" });
    expect(paths.match("POST", "/elevenlabs/v1/text-to-speech/v%20one")?.params).toEqual({ voice_id: "v one" });
    expect(paths.match("POST", "/gemini/v1/models/openai%2Fgpt-4.1-mini:generateContent")?.params).toEqual({ target: "openai/gpt-4.1-mini:generateContent" });
  });

  it("refuses dot segments, backslashes and malformed percent-encoding, literal or encoded", () => {
    for (const path of [
      "/openai/v1/../v1/chat/completions",
      "/openai/v1/./chat/completions",
      "/openai/v1/%2e%2e/v1/chat/completions",
      "/openai/v1/%2E/chat/completions",
      "/openai/v1/chat/..",
      "/openai/v1/..%2F..%2Fv1/ingest",
      "/openai/v1/chat\\completions",
      "/openai/v1/chat%5Ccompletions",
      "/p/%zz/s/x/openai/v1/chat/completions",
      "/p/../s/x/openai/v1/chat/completions",
      "/elevenlabs/v1/text-to-speech/%2E%2E/stream",
    ]) {
      expect(policyRefusal(path), path).not.toBeNull();
    }
    expect(kind("POST", "/openai/v1/../../v1/ingest")).toBe("400 openai");
    expect(kind("POST", "/p/x/s/%2e%2e/anthropic/v1/messages")).toBe("400 anthropic");
    for (const path of ["/openai/v1/chat/completions", "/p/a.b/s/.hidden/openai/v1/chat/completions", "/gemini/v1/models/a%2Fb:generateContent"]) {
      expect(policyRefusal(path), path).toBeNull();
    }
  });
});

let stub: StubServer;
beforeAll(async () => {
  stub = await openaiChatStub().start();
});
afterAll(() => stub?.close());

const t = useTestApp(() => ({
  listen: true,
  yaml: openaiChatYaml(stub.url),
}));

/** One request with its path sent exactly as written (fetch would normalise dot segments and backslashes). */
function raw(method: string, path: string, body?: string): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: string }> {
  return new Promise((resolve, reject) => {
    const url = new URL(t.base);
    const headers: Record<string, string> = { authorization: `Bearer ${OPERATOR_KEY}`, "x-api-key": OPERATOR_KEY };
    if (body !== undefined) Object.assign(headers, { "content-type": "application/json", "content-length": String(Buffer.byteLength(body)) });
    const req = request({ host: url.hostname, port: url.port, method, path, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString() }));
    });
    req.on("error", reject);
    req.end(body);
  });
}

const chat = JSON.stringify({ model: "openai/gpt-4.1-mini", messages: [{ role: "user", content: "hi" }] });

describe("the gateway listener on a server", () => {
  it("refuses a path the policy refuses in the vendor's shape, before any vendor or other route is reached", async () => {
    const hits = stub.hits.length;
    const dots = await raw("POST", "/openai/v1/../../v1/ingest", "[]");
    expect(dots.status).toBe(400);
    expect(JSON.parse(dots.body)).toMatchObject({ error: { type: "invalid_request_error", code: "invalid_request" } });
    expect(dots.headers["x-voxgate-request-id"]).toBeTruthy();
    const anthropic = await raw("POST", "/anthropic/v1/%2e%2e/messages", "{}");
    expect(anthropic.status).toBe(400);
    expect(JSON.parse(anthropic.body)).toMatchObject({ type: "error", error: { type: "invalid_request_error" } });
    expect((await raw("POST", "/openai/v1/chat\\completions", chat)).status).toBe(400);
    expect(stub.hits.length).toBe(hits);
  });

  it("answers an unknown route 404 and a plain request on a WebSocket route 426, each without a vendor", async () => {
    const unknown = await raw("POST", "/openai/v1/chat/completions/", chat);
    expect(unknown.status).toBe(404);
    expect(JSON.parse(unknown.body)).toMatchObject({ error: { message: "no route POST /openai/v1/chat/completions/" } });
    const ws = await raw("GET", "/p/a/s/b/openai/v1/realtime?model=gpt-realtime");
    expect(ws.status).toBe(426);
    expect(ws.headers.upgrade).toBe("websocket");
    expect(JSON.parse(ws.body)).toMatchObject({ error: { code: "upgrade_required" } });
  });

  it("serves the routes it answers itself, HEAD included, and proxies with decoded attribution", async () => {
    const models = await raw("GET", "/openai/v1/models");
    expect(models.status).toBe(200);
    expect(JSON.parse(models.body).data.map((m: { id: string }) => m.id)).toContain("openai/gpt-4.1-mini");
    const head = await raw("HEAD", "/openai/v1/models");
    expect(head.status).toBe(200);
    expect(head.body).toBe("");
    const called = await raw("POST", "/p/caf%C3%A9/s/s%201/openai/v1/chat/completions?trace=1", chat);
    expect(called.status).toBe(200);
    const row = (await recordedRows(t)).at(-1);
    expect(row).toMatchObject({ project: "café", session_id: "s 1", status: "success" });
  });

  it("takes every WebSocket upgrade: a path that is no WebSocket route is refused 404, one the policy refuses 400", async () => {
    const status = (path: string) =>
      new Promise<number>((resolve, reject) => {
        const ws = new WebSocket(t.base.replace("http", "ws") + path, { headers: { authorization: `Bearer ${OPERATOR_KEY}` } });
        ws.once("unexpected-response", (_req, res) => resolve(res.statusCode ?? 0));
        ws.once("open", () => {
          ws.close();
          reject(new Error(`${path} upgraded`));
        });
        ws.once("error", () => {});
      });
    expect(await status("/openai/v1/chat/completions")).toBe(404);
    expect(await status("/v1/ingest")).toBe(404);
    expect(await status("/openai/v1/%zz/realtime")).toBe(400);
  });

  it("leaves every other path to the app (its API answers, the gateway's prefixes do not leak into it)", async () => {
    expect((await raw("GET", "/health")).status).toBe(200);
    const notOurs = await raw("POST", "/openai/v2/chat/completions", chat);
    expect(notOurs.headers["x-voxgate-request-id"]).toBeUndefined();
  });
});
