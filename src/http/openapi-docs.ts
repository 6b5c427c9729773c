import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import type { OpenAPIHono } from "@hono/zod-openapi";
import { Hono, type MiddlewareHandler } from "hono";
import { z } from "zod";
import type { AppEnv } from "./app-env.js";
import { contractRouter, defineRoute, OPENAPI_INFO } from "./openapi.js";

/** Where the reference page loads Scalar's single-file browser bundle from (served by us, not a CDN). */
export const SCALAR_BUNDLE_PATH = "/docs/scalar.js";

/**
 * GET /v1/openapi.json: the OpenAPI 3.1 document generated from the route declarations (no auth;
 * it holds paths and schemas only, never a key or a configured value).
 */
export function openApiRoutes(app: OpenAPIHono<AppEnv>) {
  const r = contractRouter();
  defineRoute(
    r,
    {
      method: "get",
      path: "/v1/openapi.json",
      tag: "meta",
      summary: "This API's OpenAPI 3.1 document",
      scope: null,
      responses: { 200: { description: "the document", schema: z.record(z.string(), z.unknown()) } },
    },
    (c) => c.json(openApiDocument(app) as Record<string, unknown>),
  );
  return r;
}

const documents = new WeakMap<OpenAPIHono<AppEnv>, unknown>();

/** The app's OpenAPI 3.1 document, generated once per app (served at /v1/openapi.json and as an MCP resource). */
export function openApiDocument(app: OpenAPIHono<AppEnv>): unknown {
  let document = documents.get(app);
  if (document === undefined) {
    document = app.getOpenAPI31Document(OPENAPI_INFO);
    documents.set(app, document);
  }
  return document;
}

function scalarBundle(): string {
  const require = createRequire(import.meta.url);
  // The package's main entry is dist/index.js; the standalone UMD bundle sits in dist/browser.
  return join(dirname(require.resolve("@scalar/api-reference")), "browser", "standalone.js");
}

/**
 * /docs: Scalar's interactive reference over /v1/openapi.json. Everything it loads comes from this
 * origin: its bundle from node_modules at /docs/scalar.js, no web fonts, no telemetry. The page
 * needs an inline script (Scalar's init) and inline styles, so it gets its own CSP (DOCS_CSP in
 * security-headers.ts; the web app's stays strict).
 */
export function docsRoutes() {
  const r = new Hono<AppEnv>();
  let bundle: string | null = null;
  r.get(SCALAR_BUNDLE_PATH, (c) => {
    bundle ??= readFileSync(scalarBundle(), "utf8");
    c.header("Cache-Control", "public, max-age=3600");
    return c.body(bundle, 200, { "content-type": "text/javascript; charset=utf-8" });
  });
  // The page's handler (and its package) is made on the first visit: a server nobody reads the
  // reference of never loads it (startup time, docs/perf/startup.md).
  let page: Promise<MiddlewareHandler> | null = null;
  r.get("/docs", async (c, next) => {
    page ??= import("@scalar/hono-api-reference").then(({ Scalar }) =>
      Scalar({
        url: "/v1/openapi.json",
        pageTitle: "Voxgate API",
        cdn: SCALAR_BUNDLE_PATH,
        withDefaultFonts: false,
        telemetry: false,
        hideClientButton: true,
      }),
    );
    return (await page)(c, next);
  });
  return r;
}
