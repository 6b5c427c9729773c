import { Session } from "node:inspector/promises";
import { relative } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { useTestApp } from "../support/app.js";
import { openaiChatStub } from "../support/stubs/openai-chat.js";
import type { StubServer } from "../support/stubs/stub-server.js";

/**
 * How many modules of src/ one gateway call and one ingested record walk through: the modules whose
 * code runs (V8's precise coverage) in each of three calls after a warm-up. Only modules seen in all
 * three count, so a background timer (the recorder's flush, the stream sweeper) firing during one call
 * is not counted. docs/architecture.md quotes these counts; the bounds below fail a change that
 * lengthens either walk.
 */

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const OPERATOR_KEY = "vg-operator-key-0123456789";
const PROVIDER_KEY = "sk-provider-key-0123456789";

/**
 * The walks as of 2026-11-28: a chat call through the gateway listener (24 modules: 26 through the
 * former fast listener, less the Hono adapter's respond.ts folded into exchange.ts and the security
 * headers read once at load), a record through POST /v1/ingest (31: 55 until the database handle
 * stopped building Drizzle's relational query builders, which read every table module of
 * src/db/schema/, for each transaction; 32 since the fold leaves the samples of sketches already past
 * the exact bound out of its JSON, which src/rollups/sketch-json.ts decides per sketch). A walk that
 * grows fails here until the new module is judged worth it.
 */
const GATEWAY_CALL_MODULES = 24;
const INGESTED_RECORD_MODULES = 32;

let stub: StubServer;
const session = new Session();

beforeAll(async () => {
  stub = await openaiChatStub().start();
  session.connect();
  await session.post("Profiler.enable");
  await session.post("Profiler.startPreciseCoverage", { callCount: true, detailed: false });
});

afterAll(async () => {
  await session.post("Profiler.stopPreciseCoverage");
  session.disconnect();
  await stub.close();
});

const t = useTestApp(() => ({
  listen: true,
  yaml: `
auth:
  api_keys: ["${OPERATOR_KEY}"]
providers:
  openai: { api_key: "${PROVIDER_KEY}", base_url: "${stub.url}/v1" }
models:
  llm:
    openai/gpt-4.1-mini: { provider: openai, model: gpt-4.1-mini }
gateway:
  refresh_interval_ms: 600000
`,
}));

/** src/ modules that ran since the last call (taking the coverage resets V8's counters). */
async function modulesRun(): Promise<Set<string>> {
  const { result } = await session.post("Profiler.takePreciseCoverage");
  const ran = new Set<string>();
  for (const script of result) {
    const path = script.url.startsWith("file:") ? fileURLToPath(script.url) : script.url;
    const rel = relative(ROOT, path).split("\\").join("/");
    if (!rel.startsWith("src/")) continue;
    if (script.functions.some((f) => f.ranges.some((r) => r.count > 0))) ran.add(rel);
  }
  return ran;
}

/** The modules that ran in every one of three calls of `call` (the counters reset before each). */
async function walk(call: () => Promise<void>): Promise<string[]> {
  let common = new Set<string>();
  for (let i = 0; i < 3; i++) {
    await modulesRun();
    await call();
    const ran = await modulesRun();
    common = i === 0 ? ran : new Set([...common].filter((m) => ran.has(m)));
  }
  return [...common].sort();
}

const chat = () =>
  fetch(`${t.base}/openai/v1/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${OPERATOR_KEY}`, "content-type": "application/json" },
    body: JSON.stringify({ model: "gpt-4.1-mini", messages: [{ role: "user", content: "hi" }] }),
  });

const record = (n: number) => ({
  id: `00000000-0000-4000-8000-${String(n).padStart(12, "0")}`,
  timestamp: Date.now(),
  modality: "llm",
  model_id: "openai/gpt-4.1-mini",
  provider: "openai",
  input_tokens: 10,
  output_tokens: 5,
  session_id: `s-${n}`,
});

describe("the walk of a call and of a record", () => {
  it("a gateway chat call runs code in at most GATEWAY_CALL_MODULES modules of src/", async () => {
    expect((await chat()).status).toBe(200);
    await t.services.gateway.recorder.flush();
    const modules = await walk(async () => {
      const res = await chat();
      expect(res.status).toBe(200);
      await res.arrayBuffer();
    });
    console.log(`gateway call: ${modules.length} modules\n  ${modules.join("\n  ")}`);
    expect(modules).toContain("src/gateway/pipeline.ts");
    expect(modules.length).toBeLessThanOrEqual(GATEWAY_CALL_MODULES);
  });

  it("an ingested record runs code in at most INGESTED_RECORD_MODULES modules of src/", async () => {
    await t.services.gateway.recorder.flush();
    expect((await t.call("POST", "/v1/ingest", { key: OPERATOR_KEY, body: [record(1)] })).status).toBe(200);
    let n = 1;
    const modules = await walk(async () => {
      const res = await t.call("POST", "/v1/ingest", { key: OPERATOR_KEY, body: [record(++n)] });
      expect(res.status).toBe(200);
      expect(((await res.json()) as { accepted: number }).accepted).toBe(1);
    });
    // The gateway's timers (the recorder's flush every 200 ms, the stream sweeper) run whatever the
    // request; a record's path never enters src/gateway/.
    const walked = modules.filter((m) => !m.startsWith("src/gateway/"));
    console.log(`ingested record: ${walked.length} modules\n  ${walked.join("\n  ")}`);
    expect(walked).toContain("src/ingest/store-requests.ts");
    expect(walked.length).toBeLessThanOrEqual(INGESTED_RECORD_MODULES);
  });
});
