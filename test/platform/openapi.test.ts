import { Validator } from "@seriousme/openapi-schema-validator";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { createApp } from "../../src/http/app.js";
import { checkContracts, contractRouter, defineRoute } from "../../src/http/openapi.js";
import { useTestApp } from "../support/app.js";

const yaml = `
auth:
  api_keys:
    - key: sk-admin-0123456789abcdef
      name: admin
`;

const t = useTestApp({ yaml });

interface OpenApiDocument {
  openapi: string;
  paths: Record<string, Record<string, { security?: Record<string, string[]>[]; tags?: string[]; responses: Record<string, unknown> }>>;
  components?: { securitySchemes?: Record<string, unknown> };
}

async function document(): Promise<OpenApiDocument> {
  const res = await t.call("GET", "/v1/openapi.json");
  expect(res.status).toBe(200);
  return (await res.json()) as OpenApiDocument;
}

/** Hono's `:name` and `:name{regex}` to OpenAPI's `{name}`. */
const toOpenApi = (path: string) => path.replaceAll(/:([A-Za-z0-9_]+)(\{[^}]*\})?/g, "{$1}");

/**
 * Mounted routes that are not API operations: middleware (`use`), the catch-alls (JSON 404 under
 * /v1 and /api, vendor-shaped 404 under each gateway prefix), the web app and the /docs page.
 */
function isOperation(route: { method: string; path: string }): boolean {
  if (route.method === "ALL") return false;
  if (route.path === "*" || route.path.endsWith("/*")) return false;
  if (route.path === "/docs" || route.path.startsWith("/docs/")) return false;
  return true;
}

/** Routes allowed to be missing from the document: none (every area declares its routes with defineRoute). */
const PENDING: RegExp[] = [];

describe("GET /v1/openapi.json", () => {
  it("is a valid OpenAPI 3.1 document, served without auth", async () => {
    const doc = await document();
    expect(doc.openapi).toMatch(/^3\.1\./);
    const result = await new Validator().validate(doc as unknown as Record<string, unknown>);
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
  });

  it("describes every mounted route", async () => {
    const doc = await document();
    const app = createApp(t.services);
    const missing = app.routes
      .filter(isOperation)
      .map((r) => `${r.method.toLowerCase()} ${toOpenApi(r.path)}`)
      .filter((op) => !PENDING.some((p) => p.test(op)))
      .filter((op) => {
        const [method = "", path = ""] = op.split(" ");
        return doc.paths[path]?.[method] === undefined;
      });
    expect([...new Set(missing)]).toEqual([]);
  });

  it("names the bearer scheme and a scope on every gated operation, and holds no secret", async () => {
    const doc = await document();
    expect(doc.components?.securitySchemes?.bearer).toBeDefined();
    const text = JSON.stringify(doc);
    expect(text).not.toContain("sk-admin-0123456789abcdef");
    for (const [path, ops] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(ops)) {
        expect(op.tags?.length, `${method} ${path} has a tag`).toBeGreaterThan(0);
        expect(op.security, `${method} ${path} declares its security`).toBeDefined();
      }
    }
  });
});

describe("/docs", () => {
  it("serves the reference page loading Scalar from this origin only", async () => {
    const res = await t.call("GET", "/docs");
    expect(res.status).toBe(200);
    const html = await res.text();
    expect(html).toContain('src="/docs/scalar.js"');
    expect(html).toContain("/v1/openapi.json");
    expect(html).not.toMatch(/https?:\/\/(?!127\.0\.0\.1)[a-z]/i);
    expect(res.headers.get("content-security-policy")).toContain("connect-src 'self'");
  });

  it("serves Scalar's bundle from node_modules", async () => {
    const res = await t.call("GET", "/docs/scalar.js");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toContain("javascript");
    expect((await res.text()).length).toBeGreaterThan(100_000);
  });
});

describe("the test-mode response check", () => {
  it("turns an answer that breaks its documented schema into a 500 naming the route", async () => {
    const app = contractRouter();
    app.use(checkContracts);
    defineRoute(
      app,
      { method: "get", path: "/x/{id}", tag: "t", summary: "s", scope: null, responses: { 200: { description: "ok", schema: z.object({ n: z.number() }) } } },
      (c) => (c.req.param("id") === "good" ? c.json({ n: 1 }) : c.json({ n: "one" })),
    );
    expect((await app.request("/x/good")).status).toBe(200);
    const bad = await app.request("/x/bad");
    expect(bad.status).toBe(500);
    expect(((await bad.json()) as { error: { message: string } }).error.message).toContain("GET /x/{id}: n:");
  });
});
