import { createServer, type RequestListener, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { getRequestListener } from "@hono/node-server";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { gatewayFastListener } from "../../src/gateway/fast-path.js";
import { createApp } from "../../src/http/app.js";
import { createTestApp, type TestApp } from "../support/app.js";
import { anthropicStub } from "../support/stubs/anthropic.js";
import { openaiChatStub } from "../support/stubs/openai-chat.js";
import type { StubHit, StubServer, StubStep } from "../support/stubs/stub-server.js";
import { ACME_KEY, INGEST_KEY, KEYS_YAML, OPERATOR_KEY, PROVIDER_KEY, type RequestRowView, recordedRows } from "./support.js";

/**
 * The fast listener (src/gateway/fast-path.ts) against the Hono route it stands in front of: the same
 * requests sent to two apps of the same yaml, one served through the fast listener and one through
 * Hono alone, must get the same answers (status, headers, body), send the same upstream requests and
 * record the same rows — successes, SSE, auth refusals, malformed bodies, limits, a blocked budget and
 * a fallback. Requests the fast listener does not take must reach Hono.
 */

let primary: StubServer;
let backup: StubServer;
let claude: StubServer;
const sides: Record<"fast" | "hono", { app: TestApp; server: Server; base: string }> = {} as never;
/** Requests the fast side handed to Hono. */
const fellThrough: string[] = [];

const listen = async (listener: RequestListener) => {
  const server = createServer(listener);
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  return { server, base: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
};

beforeAll(async () => {
  primary = await openaiChatStub().start();
  backup = await openaiChatStub().start();
  claude = await anthropicStub().start();
  const yaml = `${KEYS_YAML}
providers:
  openai: { api_key: "${PROVIDER_KEY}", base_url: "${primary.url}/v1" }
  backup: { type: openai_compatible, api_key: "sk-backup-key-0123456789", base_url: "${backup.url}/v1" }
  anthropic: { api_key: "${PROVIDER_KEY}", base_url: "${claude.url}/v1" }
models:
  llm:
    openai/gpt-4.1-mini: { provider: openai, model: gpt-4.1-mini }
    backup/llama: { provider: backup, model: llama-3.1-8b }
    anthropic/claude-haiku-4-5: { provider: anthropic, model: claude-haiku-4-5 }
fallbacks:
  llm: [openai/gpt-4.1-mini, backup/llama]
projects:
  capped: { daily_budget: 0, budget_action: block }
serve:
  body_limit_bytes: 4096
gateway:
  max_cooldown_ms: 1
`;
  for (const name of ["fast", "hono"] as const) {
    const app = await createTestApp({ yaml, checkContracts: false });
    const hono = getRequestListener(createApp(app.services).fetch);
    const listener: RequestListener =
      name === "fast"
        ? gatewayFastListener(app.services.gateway, (req, res) => {
            fellThrough.push(`${req.method} ${req.url}`);
            void hono(req, res);
          })
        : (req, res) => void hono(req, res);
    sides[name] = { app, ...(await listen(listener)) };
  }
});
afterAll(async () => {
  for (const s of Object.values(sides)) {
    await new Promise<void>((r) => s.server.close(() => r()));
    await s.app.close();
  }
  await primary?.close();
  await backup?.close();
  await claude?.close();
});

interface Case {
  name: string;
  method?: string;
  path: string;
  headers?: Record<string, string>;
  body?: string | (() => ReadableStream<Uint8Array>);
  /** Steps the stubs play for this request (queued before each side's call). */
  script?: { primary?: StubStep[]; backup?: StubStep[] };
}

const chat = (extra: Record<string, unknown> = {}) => JSON.stringify({ model: "openai/gpt-4.1-mini", messages: [{ role: "user", content: "hi" }], ...extra });
const op = { authorization: `Bearer ${OPERATOR_KEY}`, "content-type": "application/json" };
const CHAT = "/openai/v1/chat/completions";

/** Served by the fast listener on the fast side. */
const FAST_CASES: Case[] = [
  { name: "chat JSON, attributed by headers", path: CHAT, headers: { ...op, "x-voxgate-project": "alpha", "x-voxgate-session": "s-1" }, body: chat() },
  { name: "the /p/{project}/s/{session} prefix and a query string", path: `/p/beta/s/s-2${CHAT}?trace=1&x=%20y`, headers: op, body: chat() },
  { name: "SSE stream (usage requested upstream)", path: CHAT, headers: op, body: chat({ stream: true }) },
  { name: "a tenant's infer key", path: CHAT, headers: { ...op, authorization: `Bearer ${ACME_KEY}` }, body: chat() },
  { name: "no key: 401", path: CHAT, headers: { "content-type": "application/json" }, body: chat() },
  { name: "an unknown key: 401", path: CHAT, headers: { ...op, authorization: "Bearer not-a-known-key-0123456789" }, body: chat() },
  { name: "an ingest-only key: 403", path: CHAT, headers: { ...op, authorization: `Bearer ${INGEST_KEY}` }, body: chat() },
  { name: "malformed JSON: 400", path: CHAT, headers: op, body: "{not json" },
  { name: "no messages: 400", path: CHAT, headers: op, body: JSON.stringify({ model: "openai/gpt-4.1-mini" }) },
  { name: "an unknown model: 404", path: CHAT, headers: op, body: chat({ model: "nope/unknown" }) },
  { name: "gzip: 415", path: CHAT, headers: { ...op, "content-encoding": "gzip" }, body: chat() },
  { name: "a declared body over the limit: 413", path: CHAT, headers: op, body: chat({ pad: "x".repeat(5000) }) },
  {
    name: "a chunked body over the limit: 413",
    path: CHAT,
    headers: op,
    body: () =>
      new ReadableStream<Uint8Array>({
        start(c) {
          for (let i = 0; i < 6; i++) c.enqueue(new TextEncoder().encode(i === 0 ? '{"pad":"' : "y".repeat(1000)));
          c.close();
        },
      }),
  },
  { name: "an attribution value too long: 400", path: CHAT, headers: { ...op, "x-voxgate-project": "p".repeat(300) }, body: chat() },
  { name: "a blocked budget: 402, no vendor reached", path: `/p/capped/s/s-3${CHAT}`, headers: op, body: chat() },
  {
    name: "anthropic messages",
    path: "/anthropic/v1/messages",
    headers: { "x-api-key": OPERATOR_KEY, "anthropic-version": "2023-06-01", "content-type": "application/json" },
    body: JSON.stringify({ model: "anthropic/claude-haiku-4-5", max_tokens: 16, messages: [{ role: "user", content: "hi" }] }),
  },
  { name: "an upstream 500 answered by the fallback", path: CHAT, headers: op, body: chat(), script: { primary: [{ status: 500 }] } },
  { name: "every candidate failing: 503 in OpenAI's shape", path: CHAT, headers: op, body: chat(), script: { primary: [{ reset: true }], backup: [{ status: 503 }] } },
];

/** Not the fast listener's: they must reach Hono, and answer as Hono does. */
const HONO_CASES: Case[] = [
  { name: "GET /models (a local route)", method: "GET", path: "/openai/v1/models", headers: op },
  { name: "a trailing slash", path: `${CHAT}/`, headers: op, body: chat() },
  { name: "a percent-encoded project", path: `/p/caf%C3%A9/s/s-4${CHAT}`, headers: op, body: chat() },
  { name: "an unknown gateway route", path: "/openai/v1/nothing-here", headers: op, body: chat() },
];

interface Seen {
  status: number;
  headers: Record<string, string>;
  body: string;
  hits: StubHit[];
}

async function send(side: "fast" | "hono", c: Case): Promise<Seen> {
  await new Promise((r) => setTimeout(r, 2)); // past the 1 ms cooldown of a failed attempt
  primary.script(...(c.script?.primary ?? []));
  backup.script(...(c.script?.backup ?? []));
  const marks = [primary.hits.length, backup.hits.length, claude.hits.length] as const;
  const body = typeof c.body === "function" ? c.body() : c.body;
  const res = await fetch(sides[side].base + c.path, {
    method: c.method ?? "POST",
    headers: c.headers,
    body,
    ...(typeof c.body === "function" && { duplex: "half" }),
  } as RequestInit);
  const text = await res.text();
  const headers: Record<string, string> = {};
  res.headers.forEach((v, k) => {
    if (k !== "date") headers[k] = k === "x-voxgate-request-id" ? "<id>" : v;
  });
  const hits = [...primary.hits.slice(marks[0]), ...backup.hits.slice(marks[1]), ...claude.hits.slice(marks[2])].map((h) => ({
    ...h,
    headers: { ...h.headers, host: "<host>" },
  }));
  return { status: res.status, headers, body: text.replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g, "<uuid>"), hits };
}

/** A recorded row without what differs between two runs (ids, times). */
const comparable = (r: RequestRowView) => ({ ...r, id: "<id>", ttfb_ms: r.ttfb_ms === null ? null : "<ms>", total_latency_ms: "<ms>" });

describe("the gateway's fast listener", () => {
  it("answers, calls upstream and records exactly as the Hono route does", async () => {
    const seen: { name: string; fast: Seen; hono: Seen }[] = [];
    for (const c of [...FAST_CASES, ...HONO_CASES]) {
      const fast = await send("fast", c);
      const hono = await send("hono", c);
      seen.push({ name: c.name, fast, hono });
    }
    for (const s of seen) expect({ case: s.name, ...s.fast }).toEqual({ case: s.name, ...s.hono });
    // The cases do what their names say (so the comparison covers each path).
    const status = Object.fromEntries(seen.slice(0, FAST_CASES.length).map((s) => [s.name, s.fast.status]));
    expect(Object.values(status).filter((x) => x === 200)).toHaveLength(6);
    expect(status).toMatchObject({ "no key: 401": 401, "an ingest-only key: 403": 403, "malformed JSON: 400": 400, "gzip: 415": 415 });
    expect(status).toMatchObject({ "a declared body over the limit: 413": 413, "a chunked body over the limit: 413": 413, "a blocked budget: 402, no vendor reached": 402 });
    expect(status["every candidate failing: 503 in OpenAI's shape"]).toBe(503);
    expect(seen.find((s) => s.name.startsWith("a blocked budget"))?.fast.hits).toEqual([]);

    const [fastRows, honoRows] = [await recordedRows(sides.fast.app), await recordedRows(sides.hono.app)];
    expect(fastRows.map(comparable)).toEqual(honoRows.map(comparable));
    expect(fastRows.map((r) => r.status)).toContain("fallback");
    expect(fastRows.find((r) => r.project === "beta")?.session_id).toBe("s-2");

    // Only the requests the fast listener does not serve reached Hono on the fast side.
    expect(fellThrough).toEqual(HONO_CASES.map((c) => `${c.method ?? "POST"} ${c.path}`));
  });
});
