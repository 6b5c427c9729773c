import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "../support/db.js";
import { type SpawnedServer, spawnServer } from "../support/spawn.js";
import { openaiChatStub } from "../support/stubs/openai-chat.js";
import type { StubServer } from "../support/stubs/stub-server.js";

const README = readFileSync(new URL("../../README.md", import.meta.url), "utf8");
const section = README.slice(README.indexOf("## Route calls through Voxgate"), README.indexOf("## Deployment"));
const block = (lang: string) => {
  const m = new RegExp(`\`\`\`${lang}\\n([\\s\\S]*?)\`\`\``).exec(section);
  if (!m?.[1]) throw new Error(`README section has no ${lang} block`);
  return m[1];
};
const KEY = "readme-voxgate-key-0123456789";
const OPENAI_KEY = "sk-readme-openai-key-0123456789";

let stub: StubServer;
let db: TestDatabase;
let server: SpawnedServer;

beforeAll(async () => {
  stub = await openaiChatStub().start();
  db = await createTestDatabase();
  const dir = mkdtempSync(join(tmpdir(), "voxgate-readme-"));
  // The README's yaml as written; only the provider's base URL is pointed at the loopback stub.
  const yaml = block("yaml").replace('{ api_key: "${OPENAI_API_KEY}" }', `{ api_key: "\${OPENAI_API_KEY}", base_url: "${stub.url}/v1" }`);
  expect(yaml).toContain(stub.url);
  writeFileSync(join(dir, "voxgate.yaml"), yaml);
  server = await spawnServer({
    HOME: dir,
    VOXGATE_CONFIG: join(dir, "voxgate.yaml"),
    DATABASE_URL: db.url ?? undefined,
    VOXGATE_DB_PATH: db.url ? undefined : join(dir, "db"),
    VOXGATE_API_KEY: KEY,
    OPENAI_API_KEY: OPENAI_KEY,
  });
}, 90_000);
afterAll(async () => {
  server?.child.kill("SIGTERM");
  await server?.exited;
  await db?.drop();
  await stub?.close();
});

describe("README: Route calls through Voxgate", () => {
  it("runs the README's client code against Voxgate and finds the call in /v1/logs", async () => {
    const js = block("js")
      .replace('import OpenAI from "openai";', "")
      .replaceAll("http://localhost:8080", server.baseUrl)
      .replace("console.log(", "return (");
    const run = new Function("OpenAI", "process", `return (async () => {${js}})();`) as (o: typeof OpenAI, p: unknown) => Promise<unknown>;
    const content = await run(OpenAI, { env: { VOXGATE_API_KEY: KEY } });
    expect(content).toBe("Hello there!");
    expect(stub.hits.at(-1)?.headers.authorization).toBe(`Bearer ${OPENAI_KEY}`);

    // The README's curl line: its path, with the same key.
    const path = /curl -s -H "Authorization: Bearer \$VOXGATE_API_KEY" "http:\/\/localhost:8080(\/v1\/logs[^"]*)"/.exec(section)?.[1];
    expect(path).toBe("/v1/logs?limit=1");
    let logs: { project: string; model_id: string; cost_usd: number; total_latency_ms: number; status: string }[] = [];
    for (let i = 0; i < 50 && logs.length === 0; i++) {
      await new Promise((r) => setTimeout(r, 100));
      logs = (await (await fetch(`${server.baseUrl}${path}`, { headers: { authorization: `Bearer ${KEY}` } })).json()) as typeof logs;
    }
    expect(logs[0]).toMatchObject({ project: "support", model_id: "openai/gpt-4.1-mini", status: "success" });
    expect(logs[0]?.cost_usd).toBeGreaterThan(0);
    expect(logs[0]?.total_latency_ms).toBeGreaterThan(0);
  });
});
