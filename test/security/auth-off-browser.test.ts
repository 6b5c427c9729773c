import { request } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { WebSocket } from "ws";
import { PROVIDER_KEY } from "../gateway/support.js";
import { useTestApp } from "../support/app.js";
import { DeepgramStub } from "../support/stubs/deepgram.js";
import { openaiChatStub } from "../support/stubs/openai-chat.js";
import type { StubServer } from "../support/stubs/stub-server.js";

/**
 * Auth off (no keys): every caller is the operator, so what a web page can make a browser send must
 * be refused — a text/plain POST from a foreign Origin (spends money, creates projects), a WebSocket
 * from a foreign Origin, a DNS-rebinding page reading the API under its own Host name — while curl,
 * SDKs and same-machine tools keep working. With auth on nothing changes.
 */
let chat: StubServer;
const deepgram = new DeepgramStub();
beforeAll(async () => {
  chat = await openaiChatStub().start();
  await deepgram.start();
});
afterAll(async () => {
  await chat?.close();
  await deepgram.stop();
});
const yaml = () => `
providers:
  openai: { api_key: "${PROVIDER_KEY}", base_url: "${chat.url}/v1" }
  deepgram: { api_key: "${PROVIDER_KEY}", base_url: "${deepgram.url}/v1" }
models:
  llm:
    openai/gpt-4.1-mini: { provider: openai, model: gpt-4.1-mini }
  stt:
    deepgram/nova-3: { provider: deepgram, model: nova-3 }
serve:
  allowed_hosts: [voxgate.internal]
`;
const app = useTestApp(() => ({ listen: true, yaml: yaml() }));

/** A raw request over a real socket, any Host header allowed (fetch would not let a test set it). */
function raw(method: string, path: string, headers: Record<string, string>, body?: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(`${app.base}${path}`, { method, headers: { ...headers, ...(body !== undefined && { "content-length": String(Buffer.byteLength(body)) }) } }, (res) => {
      let text = "";
      res.on("data", (d: Buffer) => {
        text += d.toString();
      });
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body: text }));
    });
    req.on("error", reject);
    req.end(body);
  });
}

const port = () => new URL(app.base).port;
const chatBody = JSON.stringify({ model: "openai/gpt-4.1-mini", messages: [{ role: "user", content: "spend" }] });

function upgrade(headers: Record<string, string>): Promise<number> {
  return new Promise((resolve) => {
    const ws = new WebSocket(`${app.base.replace("http", "ws")}/deepgram/v1/listen?model=nova-3`, { headers });
    ws.on("open", () => {
      ws.close();
      resolve(101);
    });
    ws.on("unexpected-response", (_req, res) => resolve(res.statusCode ?? 0));
    ws.on("error", () => resolve(-1));
  });
}

describe("auth off: web pages are refused", () => {
  it("a text/plain POST from a foreign Origin neither reaches the vendor nor creates a project", async () => {
    const before = chat.hits.length;
    const spend = await raw("POST", "/openai/v1/chat/completions", { "content-type": "text/plain", origin: "http://evil.example" }, chatBody);
    expect(spend.status).toBe(403);
    expect(chat.hits.length).toBe(before);
    const create = await raw("POST", "/v1/projects", { "content-type": "text/plain", origin: "http://evil.example" }, JSON.stringify({ id: "evil" }));
    expect(create.status).toBe(403);
    const list = await raw("GET", "/v1/projects", {});
    expect(list.body).not.toContain("evil");
  });

  it("Sec-Fetch-Site: cross-site and Origin: null are refused", async () => {
    expect((await raw("POST", "/openai/v1/chat/completions", { "content-type": "text/plain", "sec-fetch-site": "cross-site" }, chatBody)).status).toBe(403);
    expect((await raw("POST", "/v1/projects", { "content-type": "text/plain", origin: "null" }, JSON.stringify({ id: "sandboxed" }))).status).toBe(403);
  });

  it("a WebSocket from a foreign Origin gets no 101", async () => {
    const before = deepgram.seen.length;
    expect(await upgrade({ origin: "http://evil.example" })).toBe(403);
    expect(deepgram.seen.length).toBe(before);
    expect(await upgrade({})).toBe(101);
  });

  it("a DNS-rebinding page (foreign Host) cannot read the API; /health still answers any Host", async () => {
    const read = await raw("GET", "/v1/providers", { host: `evil.example:${port()}` });
    expect(read.status).toBe(403);
    expect(read.body).not.toContain(chat.url);
    expect((await raw("POST", "/openai/v1/chat/completions", { host: `evil.example:${port()}`, "content-type": "application/json" }, chatBody)).status).toBe(403);
    expect((await raw("GET", "/health", { host: `10.0.0.7:${port()}` })).status).toBe(200);
  });

  it("loopback names, serve.allowed_hosts and same-machine origins keep working", async () => {
    for (const host of [`127.0.0.1:${port()}`, `localhost:${port()}`, `[::1]:${port()}`, "voxgate.internal"]) {
      const r = await raw("GET", "/v1/providers", { host });
      expect(r.status, host).toBe(200);
    }
    const fromDashboard = await raw("POST", "/openai/v1/chat/completions", { "content-type": "application/json", origin: `http://localhost:${port()}`, "sec-fetch-site": "same-origin" }, chatBody);
    expect(fromDashboard.status, fromDashboard.body).toBe(200);
  });
});

describe("auth on: nothing changes for clients holding a key", () => {
  const KEY = "browser-guard-operator-key-0123456789";
  const keyed = useTestApp(() => ({ listen: true, yaml: `auth:\n  api_keys: [${KEY}]\n${yaml()}` }));
  it("a foreign Origin and Host with a valid key are served", async () => {
    const r = await new Promise<number>((resolve, reject) => {
      const req = request(`${keyed.base}/v1/providers`, { headers: { authorization: `Bearer ${KEY}`, origin: "http://evil.example", host: "api.example.com" } }, (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      });
      req.on("error", reject);
      req.end();
    });
    expect(r).toBe(200);
  });
});
