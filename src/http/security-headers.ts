import { createMiddleware } from "hono/factory";
import { secureHeaders } from "hono/secure-headers";
import type { AppEnv } from "./app-env.js";

/**
 * The web app's Content-Security-Policy. Strict, and what a Vite + React build lives with: Vite emits
 * external module scripts and CSS files (no inline script or style element), React sets styles
 * through the CSSOM (not governed by style-src), uPlot draws on canvas. Everything comes from this
 * origin; nothing may frame the app. A dashboard change that needs an inline <script> or <style>, a
 * style="…" attribute in index.html, eval, or another origin has to change this policy (and say why).
 */
export const WEB_APP_CSP = {
  defaultSrc: ["'self'"],
  scriptSrc: ["'self'"],
  styleSrc: ["'self'"],
  imgSrc: ["'self'", "data:"],
  fontSrc: ["'self'"],
  connectSrc: ["'self'"],
  workerSrc: ["'self'"],
  manifestSrc: ["'self'"],
  objectSrc: ["'none'"],
  baseUri: ["'none'"],
  formAction: ["'self'"],
  frameAncestors: ["'none'"],
};

/**
 * The API reference at /docs (Scalar): its init is an inline script and it sets inline styles, so
 * those two are allowed there only; everything still loads from this origin (its bundle is served
 * from node_modules), and it connects only to this origin's /v1/openapi.json.
 */
export const DOCS_CSP = {
  ...WEB_APP_CSP,
  scriptSrc: ["'self'", "'unsafe-inline'"],
  styleSrc: ["'self'", "'unsafe-inline'"],
  fontSrc: ["'self'", "data:"],
};

/** JSON answers are never rendered as documents: nothing may load from or frame them. */
const API_CSP = { defaultSrc: ["'none'"], frameAncestors: ["'none'"], baseUri: ["'none'"], formAction: ["'none'"] };

// Shared by both: nosniff, X-Frame-Options DENY, Referrer-Policy no-referrer (hono's defaults plus
// those). HSTS is left to the TLS terminator: sent from here it would also bind the operator's
// other subdomains.
const common = { xFrameOptions: "DENY", referrerPolicy: "no-referrer", xContentTypeOptions: "nosniff", strictTransportSecurity: false } as const;
const apiHeaders = secureHeaders({ ...common, contentSecurityPolicy: API_CSP });
const webHeaders = secureHeaders({ ...common, contentSecurityPolicy: WEB_APP_CSP });
const docsHeaders = secureHeaders({ ...common, contentSecurityPolicy: DOCS_CSP });
const isDocsPath = (path: string) => path === "/docs" || path.startsWith("/docs/");

const isApiPath = (path: string) => path.startsWith("/v1/") || path.startsWith("/api/") || path === "/v1" || path === "/api" || path === "/health";

/**
 * Security headers on every answer, errors included. API answers (/v1, /api, /health) are also
 * `Cache-Control: no-store`: they hold tenant data, and one of them is a minted key's only plaintext.
 */
export const securityHeaders = createMiddleware<AppEnv>(async (c, next) => {
  const api = isApiPath(c.req.path);
  await (api ? apiHeaders : isDocsPath(c.req.path) ? docsHeaders : webHeaders)(c, next);
  if (api) c.res.headers.set("Cache-Control", "no-store");
});

/**
 * The headers securityHeaders sets on an API answer, as a constant: the gateway writes its answers
 * straight to the socket (no middleware on its hot path) and takes the values it sends from here.
 */
export const API_SECURITY_HEADERS: Readonly<Record<string, string>> = {
  "content-security-policy": "default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
  "cross-origin-opener-policy": "same-origin",
  "cross-origin-resource-policy": "same-origin",
  "origin-agent-cluster": "?1",
  "referrer-policy": "no-referrer",
  "x-content-type-options": "nosniff",
  "x-dns-prefetch-control": "off",
  "x-download-options": "noopen",
  "x-frame-options": "DENY",
  "x-permitted-cross-domain-policies": "none",
  "x-xss-protection": "0",
  "cache-control": "no-store",
};

/**
 * The headers on the gateway's vendor-protocol answers (proxied calls and their errors, written by
 * src/gateway/exchange.ts): what OWASP's REST Security Cheat Sheet asks of an API response (not
 * cached, not framed, not sniffed, nothing loaded if a browser opens it), with the same values as
 * API_SECURITY_HEADERS. The rest of that set are document policies a browser applies to pages
 * (opener and resource policies, agent cluster, referrer, DNS prefetch, download options, Flash
 * policies, XSS filter); these answers are read by vendor SDKs on the voice path, where every header
 * is written by Voxgate and parsed by the SDK on each call: the eight cost 0.017-0.024 ms of p50 at
 * concurrency 1 in a probe (docs/PERFORMANCE.md, 2026-11-24).
 */
export const GATEWAY_SECURITY_HEADERS: Readonly<Record<string, string>> = Object.fromEntries(
  ["content-security-policy", "x-content-type-options", "x-frame-options", "cache-control"].map((name) => [name, API_SECURITY_HEADERS[name] as string]),
);
