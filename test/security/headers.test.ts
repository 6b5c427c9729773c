import { describe, expect, it } from "vitest";
import { useTestApp } from "../support/app.js";
import { KEYS, OPS_YAML } from "../support/fixtures.js";
import { http } from "./http.js";

// Security headers on /v1, /api and the web app; no-store on API answers.
const OPERATOR = KEYS.ops;

function expectCommon(res: Response, what: string) {
  expect(res.headers.get("x-content-type-options"), what).toBe("nosniff");
  expect(res.headers.get("x-frame-options"), what).toBe("DENY");
  expect(res.headers.get("referrer-policy"), what).toBe("no-referrer");
  expect(res.headers.get("content-security-policy"), what).toContain("frame-ancestors 'none'");
}

describe("security headers", () => {
  const t = useTestApp({ yaml: OPS_YAML });

  it("every /v1 and /api answer, errors included, is no-store with the security headers", async () => {
    const cases: [string, string, { key?: string; body?: unknown }][] = [
      ["GET", "/v1/costs", { key: OPERATOR }],
      ["GET", "/v1/costs", {}],
      ["GET", "/v1/costs", { key: "wrong-key-0123456789abcdef" }],
      ["GET", "/v1/no-such-route", { key: OPERATOR }],
      ["GET", "/api/costs", { key: OPERATOR }],
      ["GET", "/api/nothing-here", { key: OPERATOR }],
      ["POST", "/v1/ingest", { key: OPERATOR, body: { not: "an array" } }],
      ["GET", "/health", {}],
    ];
    for (const [method, path, o] of cases) {
      const res = await http(t, method, path, o);
      const what = `${method} ${path} → ${res.status}`;
      expectCommon(res, what);
      expect(res.headers.get("cache-control"), what).toBe("no-store");
      expect(res.headers.get("content-security-policy"), what).toContain("default-src 'none'");
    }
  });

  it("the minted key's plaintext answer is never cached", async () => {
    const res = await http(t, "POST", "/v1/api-keys", { key: OPERATOR, body: { name: "agents" } });
    expect(res.status).toBe(201);
    expect(res.headers.get("cache-control")).toBe("no-store");
  });

  it("the web app gets a strict CSP: scripts, styles and connections from this origin only, no inline code", async () => {
    for (const path of ["/", "/sessions/abc", "/assets/none.js"]) {
      const res = await http(t, "GET", path);
      const csp = res.headers.get("content-security-policy") ?? "";
      expectCommon(res, path);
      expect(csp).toContain("script-src 'self'");
      expect(csp).toContain("style-src 'self'");
      expect(csp).toContain("connect-src 'self'");
      expect(csp).toContain("object-src 'none'");
      expect(csp).toContain("base-uri 'none'");
      expect(csp).not.toContain("unsafe-inline");
      expect(csp).not.toContain("unsafe-eval");
      const html = await res.text();
      if (res.status === 200 && html.includes("<html")) {
        // The built page lives with that policy: external module scripts and stylesheets only.
        expect(html).not.toMatch(/<script(?![^>]*\ssrc=)[^>]*>/i);
        expect(html).not.toMatch(/<style[\s>]/i);
        expect(html).not.toMatch(/\sstyle=|\son[a-z]+=/i);
      }
    }
  });
});
