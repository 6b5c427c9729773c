import { randomUUID } from "node:crypto";
import { describe, expect, it } from "vitest";
import { GatewayPaths } from "../../src/gateway/listener.js";
import { createApp } from "../../src/http/app.js";
import { useTestApp } from "../support/app.js";

/**
 * NUL (%00 in the URL, \u0000 in JSON) and lone surrogates (\ud800 in JSON) must never
 * reach Postgres as a 500. Walks every registered route, so a route added later is covered too.
 */
const OPS = "ops-unstorable-key-0123456789";
const SECRET_ENV = { VOXGATE_SECRET: "test-secret-for-provider-keys-0123456789", LIVEKIT_API_KEY: "lk-key", LIVEKIT_API_SECRET: "lk-secret-0123456789-0123456789" };
const yaml = `
auth:
  api_keys:
    - ${OPS}
providers:
  openai: { api_key: "sk-yaml-openai-abcdefghijklmnop" }
models:
  llm: { openai/gpt-4.1-mini: { provider: openai, model: gpt-4.1-mini } }
projects:
  support: { name: Support line }
`;

/** Every query parameter name the API reads (docs/api); each is tried on every route. */
const QUERY_NAMES = [
  "tenant", "tenant_id", "project", "period", "since", "until", "from", "to", "cursor", "limit", "confirm", "plan",
  "model", "modality", "provider", "metric", "include_probe", "include_revoked", "session_id", "agent_id", "room", "status", "level", "since_turn",
];

const now = () => new Date().toISOString();

/** A plausible body per route that reads one; every string leaf is replaced in turn with a bad string. */
const BODIES: Record<string, (() => unknown) | null> = {
  "POST /v1/api-keys": () => ({ name: "fleet", tenant_id: "acme", scopes: ["ingest"] }),
  // Reads no body: re-encrypts the stored provider keys.
  "POST /v1/secrets/rotate": null,
  "POST /mcp": () => ({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "get_costs", arguments: { project: "support" } } }),
  // OTLP/JSON: ids and names are strings the walk replaces in turn.
  "POST /v1/otlp/v1/traces": () => ({
    resourceSpans: [
      {
        resource: { attributes: [{ key: "service.name", value: { stringValue: "agent" } }] },
        scopeSpans: [
          {
            spans: [
              {
                traceId: "5b8efff798038103d269b633813fc60c",
                spanId: "eee19b7ec3c1b174",
                name: "llm_request",
                startTimeUnixNano: "1700000000000000000",
                endTimeUnixNano: "1700000001000000000",
                attributes: [{ key: "gen_ai.request.model", value: { stringValue: "gpt-4.1-mini" } }],
              },
            ],
          },
        ],
      },
    ],
  }),
  "POST /v1/agents/heartbeat": () => ({ agent_id: "agent-1", agent_name: "a", host: "h", version: "1.0", project: "support", region: "eu", status: "active" }),
  "POST /v1/billing/rate-card/quote": () => ({ models: [{ modality: "llm", model: "openai/gpt-4.1-mini", tenant: "acme", plan: "pro" }] }),
  "POST /v1/billing/rate-card/rules": () => ({ provider: "openai", model: "gpt-4.1-mini", modality: "llm", tenant: "acme", plan: "pro", rule: "cost_plus:1.2" }),
  "POST /v1/calls/observations": () => ({ origin: "agent", room_sid: "RM_x", room_name: "room", participant_sid: "PA_x", attempt_id: "att", metadata: { note: "n" } }),
  "POST /v1/ingest": () => [{ id: randomUUID(), timestamp: now(), modality: "llm", model_id: "openai/gpt-4.1-mini", project: "support", session_id: "s1", input_tokens: 1, output_tokens: 1, metadata: { note: "n" } }],
  "POST /v1/ingest/turns": () => [{ session_id: "s1", turn_index: 0, caller_speak_start_ms: Date.now() - 1000, caller_speak_end_ms: Date.now(), room: "room", project: "support" }],
  "POST /v1/ingest/dead-air": () => [{ session_id: "s1", started_at_ms: Date.now() - 1000, ended_at_ms: Date.now(), room: "room" }],
  "POST /v1/livekit/webhook": () => ({ event: "room_started", id: "EV_1", room: { sid: "RM_1", name: "room" } }),
  "POST /v1/models": () => ({ modality: "llm", provider_id: "openai", model_name: "gpt-4o", display_name: "d" }),
  "POST /v1/projects": () => ({ project_id: "p-new", name: "New", default_stack: "fast", tags: ["t"] }),
  "PATCH /v1/projects/:project_id": () => ({ name: "Renamed", tags: ["t"] }),
  "POST /v1/providers": () => ({ provider_id: "prov-new", provider_type: "openai", api_key: "sk-test-abcdefghijklmnop" }),
  "PATCH /v1/providers/:provider_id": () => ({ api_key: "sk-test-abcdefghijklmnop", base_url: "https://api.openai.com/v1" }),
  "POST /v1/providers/test": () => ({ provider_type: "openai_compatible", api_key: "sk-test-abcdefghijklmnop", base_url: "http://127.0.0.1:9/v1", model: "m" }),
  // Tests the stored provider: reads no body (and would call the vendor, so the walk leaves it out).
  "POST /v1/providers/:provider_id/test": null,
  // Gateway bodies name a model no provider serves: the walk must never spend a call upstream.
  ...vendorBodies("openai/v1/chat/completions", () => ({ model: "nowhere/none", messages: [{ role: "user", content: "hi" }] })),
  ...vendorBodies("anthropic/v1/messages", () => ({ model: "nowhere/none", max_tokens: 5, messages: [{ role: "user", content: "hi" }] })),
  // Audio routes: JSON bodies for the speech routes; the audio-upload routes get JSON too, which they refuse with a 4xx.
  ...vendorBodies("openai/v1/audio/speech", () => ({ model: "nowhere/none", input: "hi", voice: "alloy" })),
  ...vendorBodies("openai/v1/audio/transcriptions", () => ({ model: "nowhere/none", file: "x" })),
  ...vendorBodies("deepgram/v1/listen", () => ({ url: "https://example.com/a.wav", model: "nowhere/none" })),
  ...vendorBodies("deepgram/v1/speak", () => ({ text: "hi", model: "nowhere/none" })),
  ...vendorBodies("elevenlabs/v1/text-to-speech/:voice_id", () => ({ text: "hi", model_id: "nowhere/none" })),
  ...vendorBodies("elevenlabs/v1/text-to-speech/:voice_id/stream", () => ({ text: "hi", model_id: "nowhere/none" })),
  ...vendorBodies("cartesia/tts/bytes", () => ({ model_id: "nowhere/none", transcript: "hi", voice: { mode: "id", id: "v" } })),
  ...vendorBodies("openai/v1/responses", () => ({ model: "nowhere/none", input: "hi" })),
  ...vendorBodies("elevenlabs/v1/text-to-speech/:voice_id/with-timestamps", () => ({ text: "hi", model_id: "nowhere/none" })),
  ...vendorBodies("elevenlabs/v1/text-to-speech/:voice_id/stream/with-timestamps", () => ({ text: "hi", model_id: "nowhere/none" })),
  ...vendorBodies("cartesia/tts/sse", () => ({ model_id: "nowhere/none", transcript: "hi", voice: { mode: "id", id: "v" } })),
  // Gemini: the model (and the method) are in the path; "nowhere-none:generateContent" is routable nowhere.
  ...Object.assign(
    {},
    ...["v1", "v1beta"].flatMap((v) => [
      vendorBodies(`gemini/${v}/models/:target`, () => ({ contents: [{ parts: [{ text: "hi" }] }] })),
      vendorBodies(`gemini/${v}/models/:provider/:target`, () => ({ contents: [{ parts: [{ text: "hi" }] }] })),
    ]),
  ),
  // Cartesia's clients fix this path at the root (src/gateway/listener.ts).
  "POST /tts/bytes": () => ({ model_id: "nowhere/none", transcript: "hi", voice: { mode: "id", id: "v" } }),
};

/** A gateway route's body, at its vendor prefix and behind the /p/{project}/s/{session} attribution prefix. */
function vendorBodies(path: string, make: () => unknown): Record<string, () => unknown> {
  return { [`POST /${path}`]: make, [`POST /p/:project/s/:session/${path}`]: make };
}

/**
 * Gateway routes speak their vendor's protocol: errors come in the vendor's shape (the SDK parses
 * them), so for them the walk asserts a 4xx, never a 5xx, instead of Voxgate's envelope.
 */
const isVendorRoute = (path: string) => /^\/(p\/:project\/s\/:session\/)?(openai|anthropic|deepgram|elevenlabs|cartesia|gemini|assemblyai|tts)(\/|$)/.test(path);

/**
 * Routes that read their body themselves and treat bad strings per row (ingest; OTLP, whose spec
 * answers 200 with partial_success counting the refused spans) or verify a signature first.
 */
const PER_ROW_OR_SIGNED = new Set(["POST /v1/ingest", "POST /v1/ingest/turns", "POST /v1/ingest/dead-air", "POST /v1/livekit/webhook", "POST /v1/otlp/v1/traces"]);

/** Every string leaf of a JSON value, as a setter that puts a replacement in its place. */
function stringLeaves(value: unknown, path: string[] = []): string[][] {
  if (typeof value === "string") return [path];
  if (Array.isArray(value)) return value.flatMap((v, i) => stringLeaves(v, [...path, String(i)]));
  if (value !== null && typeof value === "object") return Object.entries(value).flatMap(([k, v]) => stringLeaves(v, [...path, k]));
  return [];
}

function withLeaf(value: unknown, path: string[], replacement: string): unknown {
  const copy = JSON.parse(JSON.stringify(value)) as Record<string, unknown>;
  let at: Record<string, unknown> = copy;
  for (const key of path.slice(0, -1)) at = at[key] as Record<string, unknown>;
  at[path[path.length - 1] as string] = replacement;
  return copy;
}

/** Ids that exist, so a route reaches its body instead of answering 404 for the id. */
const EXISTING: Record<string, string> = { provider_id: "openai", project_id: "support" };

/** Path params as an existing id (or "x"), except the one at `badIndex` (counted among params) as `bad`. */
function fillPath(pattern: string, badIndex: number, bad: string): string {
  let n = -1;
  return pattern
    .replace(/\/\*$/, "/x")
    .split("/")
    .map((part) => {
      if (!part.startsWith(":")) return part;
      n++;
      return n === badIndex ? bad : (EXISTING[part.slice(1)] ?? "x");
    })
    .join("/");
}

const routeKey = (method: string, path: string) => `${method} ${path}`;

describe("NUL and lone surrogates at the edge: never a 5xx, on every route", () => {
  // The app's routes and the gateway listener's (src/gateway/listener.ts), each once.
  const routes = [...new Map([...createApp({} as never).routes.filter((r) => r.method !== "ALL"), ...new GatewayPaths().list()].map((r) => [routeKey(r.method, r.path), { method: r.method, path: r.path }])).values()];

  const t = useTestApp({ yaml, env: SECRET_ENV });

  const send = (method: string, path: string, body?: unknown) =>
    t.call(method, path, { key: OPS, ...(body !== undefined ? { body } : method === "POST" || method === "PATCH" ? { body: {} } : {}) });

  it("knows a body for every route that reads one", () => {
    const bodyRoutes = routes.filter((r) => r.method === "POST" || r.method === "PATCH" || r.method === "PUT").map((r) => routeKey(r.method, r.path));
    expect(bodyRoutes.length).toBeGreaterThan(10);
    for (const key of bodyRoutes) expect(Object.keys(BODIES), key).toContain(key);
  });

  it("answers %00 in each path parameter with 404 naming the parameter", async () => {
    let tried = 0;
    for (const route of routes) {
      const params = route.path.split("/").filter((p) => p.startsWith(":"));
      for (let i = 0; i < params.length; i++) {
        const body = BODIES[routeKey(route.method, route.path)]?.();
        const res = await send(route.method, fillPath(route.path, i, "a%00b"), body);
        const label = `${route.method} ${route.path} param ${i}`;
        tried++;
        if (isVendorRoute(route.path)) {
          expect(res.status, label).toBeGreaterThanOrEqual(400);
          expect(res.status, label).toBeLessThan(500);
          continue;
        }
        expect(res.status, label).toBe(404);
        const err = ((await res.json()) as { error: { code: string; details?: { path: string }[] } }).error;
        expect(err.code, label).toBe("not_found");
        expect(err.details?.[0]?.path, label).toBe(params[i]?.slice(1).replace(/\{.*\}$/, ""));
      }
    }
    expect(tried).toBeGreaterThan(15);
  });

  it("answers %00 in each query parameter with 422 naming it, on every route", async () => {
    for (const route of routes) {
      const body = BODIES[routeKey(route.method, route.path)]?.();
      for (const name of QUERY_NAMES) {
        const res = await send(route.method, `${fillPath(route.path, -1, "")}?${name}=a%00b`, body);
        const label = `${route.method} ${route.path}?${name}`;
        // /health and the web app read no query: they only must not fail.
        if (!/^\/(v1|api)\//.test(route.path)) {
          expect(res.status, label).toBeLessThan(500);
          continue;
        }
        expect(res.status, label).toBe(422);
        const err = ((await res.json()) as { error: { code: string; details?: { path: string }[] } }).error;
        expect(err.details?.[0]?.path, label).toBe(name);
      }
    }
  });

  it("refuses \\u0000 and \\ud800 in each body string field with 422 naming the field (ingest: per row, never a 5xx)", async () => {
    for (const route of routes) {
      const key = routeKey(route.method, route.path);
      const make = BODIES[key];
      if (!make) continue;
      const base = make();
      for (const leaf of stringLeaves(base)) {
        for (const bad of ["a\u0000b", "x\ud800y", "\udc00"]) {
          const res = await send(route.method, fillPath(route.path, -1, ""), withLeaf(base, leaf, bad));
          const label = `${key} ${leaf.join(".")} ${JSON.stringify(bad)}`;
          expect(res.status, label).toBeLessThan(500);
          if (PER_ROW_OR_SIGNED.has(key)) continue;
          if (isVendorRoute(route.path)) {
            expect(res.status, label).toBeGreaterThanOrEqual(400);
            continue;
          }
          expect(res.status, label).toBe(422);
          const err = ((await res.json()) as { error: { details?: { path: string }[] } }).error;
          expect(err.details?.[0]?.path, label).toBe(leaf.join("."));
        }
      }
    }
  });

  it("refuses a NUL in an object key too, and answers the issue's examples", async () => {
    const res = await send("POST", "/v1/api-keys", { name: "ok", "bad\u0000key": 1 });
    expect(res.status).toBe(422);
    for (const [method, path, status] of [
      ["GET", "/v1/billing/usage?tenant=%00", 422],
      ["GET", "/v1/billing/rate-card/gaps?tenant=%00", 422],
      ["GET", "/api/overview?project=%00", 422],
      ["DELETE", "/v1/billing/rate-card/rules/a%00b", 404],
      ["PATCH", "/v1/projects/a%00b", 404],
      ["DELETE", "/v1/projects/a%00b", 404],
      ["PATCH", "/v1/providers/a%00b", 404],
      ["DELETE", "/v1/providers/a%00b", 404],
      ["DELETE", "/v1/models/a%00b", 404],
      ["GET", "/v1/api-keys/a%00b", 404],
      ["DELETE", "/v1/api-keys/a%00b", 404],
    ] as const) {
      expect((await send(method, path, method === "PATCH" ? { name: "n" } : undefined)).status, `${method} ${path}`).toBe(status);
    }
    expect((await send("POST", "/v1/api-keys", { name: "a\u0000b" })).status).toBe(422);
    // Without a key the gate answers first, as for any other input.
    expect((await t.call("GET", "/v1/billing/usage?tenant=%00")).status).toBe(401);
  });
});
