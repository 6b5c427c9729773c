import { gzipSync } from "node:zlib";
import { describe, expect, it } from "vitest";
import { useTestApp } from "../support/app.js";

describe("health, envelope and body limits", () => {
  const t = useTestApp({ yaml: "serve: { body_limit_bytes: 1024 }", env: { VOXGATE_API_KEY: "env-key-0123456789" } });

  it("GET /health needs no key", async () => {
    const res = await t.call("GET", "/health");
    expect(res.status).toBe(200);
    const body = (await res.json()) as { status: string; uptime_seconds: number; version: string };
    expect(body.status).toBe("ok");
    expect(typeof body.uptime_seconds).toBe("number");
    expect(typeof body.version).toBe("string");
  });

  it("unknown /v1 routes are 404 in the envelope", async () => {
    const res = await t.call("GET", "/v1/does-not-exist", { key: "env-key-0123456789" });
    expect(res.status).toBe(404);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe("not_found");
  });

  it("refuses an oversized body with 413 before parsing", async () => {
    const res = await t.call("POST", "/v1/api-keys", {
      key: "env-key-0123456789",
      raw: JSON.stringify({ name: "x".repeat(5000) }),
      headers: { "content-type": "application/json" },
    });
    expect(res.status).toBe(413);
  });

  it("accepts gzip bodies and stops a gzip bomb at the decompressed limit", async () => {
    const ok = await t.call("POST", "/v1/api-keys", {
      key: "env-key-0123456789",
      raw: gzipSync(JSON.stringify({ name: "zipped" })),
      headers: { "content-type": "application/json", "content-encoding": "gzip" },
    });
    expect(ok.status).toBe(201);
    const bomb = gzipSync(Buffer.alloc(50 * 1024 * 1024, 0x20));
    expect(bomb.byteLength).toBeLessThan(100_000);
    const res = await t.call("POST", "/v1/api-keys", {
      key: "env-key-0123456789",
      raw: bomb,
      headers: { "content-type": "application/json", "content-encoding": "gzip" },
    });
    expect(res.status).toBe(413);
    expect((await t.call("GET", "/health")).status).toBe(200);
  });

  it("invalid UTF-8 is a 400", async () => {
    const res = await t.call("POST", "/v1/api-keys", {
      key: "env-key-0123456789",
      raw: new Uint8Array([0x7b, 0x22, 0x6e, 0xff, 0xfe, 0x22, 0x7d]),
      headers: { "content-type": "application/json" },
    });
    expect(res.status).toBe(400);
  });
});

describe("web app serving", () => {
  const t = useTestApp();

  it("serves the index page at / and for client-side routes, JSON 404s under /v1 and /api", async () => {
    const root = await t.call("GET", "/");
    // The dashboard is built by `npm ci`; without a build the page explains how to make one.
    if (root.status === 200) {
      expect(root.headers.get("content-type")).toContain("text/html");
      expect((await t.call("GET", "/sessions/abc")).status).toBe(200);
    } else {
      expect(root.status).toBe(503);
      expect(await root.text()).toContain("npm run build:dashboard");
    }
    const api = await t.call("GET", "/api/nope");
    expect(api.status).toBe(404);
    expect(((await api.json()) as { error: { code: string } }).error.code).toBe("not_found");
  });
});
