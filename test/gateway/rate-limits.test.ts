import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { TestApp } from "../support/app.js";
import { createTestDatabase, type TestDatabase } from "../support/db.js";
import { type SpawnedServer, spawnServer } from "../support/spawn.js";
import { openaiChatStub } from "../support/stubs/openai-chat.js";
import type { StubServer } from "../support/stubs/stub-server.js";
import { gatewayApp, KEYS_YAML, OPERATOR_KEY, PROVIDER_KEY, recordedRows } from "./support.js";

let stub: StubServer;
let backup: StubServer;
beforeAll(async () => {
  stub = await openaiChatStub().start();
  backup = await openaiChatStub().start();
});
afterAll(async () => {
  await stub?.close();
  await backup?.close();
});

const call = (base: string, model = "openai/gpt-4.1-mini") =>
  fetch(`${base}/openai/v1/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${OPERATOR_KEY}`, "content-type": "application/json" },
    body: JSON.stringify({ model, messages: [{ role: "user", content: "x" }] }),
  });

/** Waits until at least `needMs` remain in the current calendar minute (limits are per minute). */
async function roomInMinute(needMs: number): Promise<void> {
  const left = 60_000 - (Date.now() % 60_000);
  if (left < needMs) await new Promise((r) => setTimeout(r, left + 50));
}

const limitsYaml = (rpm: number, extra = "") => `${KEYS_YAML}
providers:
  openai: { api_key: "${PROVIDER_KEY}", base_url: "${stub.url}/v1" }
  backup: { type: openai_compatible, api_key: "sk-backup-0123456789abcdef", base_url: "${backup.url}/v1" }
models:
  llm:
    openai/gpt-4.1-mini: { provider: openai, model: gpt-4.1-mini }
    backup/llama: { provider: backup, model: llama }
rate_limiting:
  openai: { requests_per_minute: ${rpm} }
${extra}`;

describe("rate limits in one process", () => {
  let app: TestApp & { base: string };
  afterAll(async () => app?.close());

  it("answers 429 with Retry-After past requests_per_minute, reaching no vendor; a fallback takes over when configured", async () => {
    app = await gatewayApp(limitsYaml(3));
    await roomInMinute(20_000);
    const before = stub.hits.length;
    const statuses = [];
    for (let i = 0; i < 5; i++) statuses.push((await call(app.base)).status);
    expect(statuses).toEqual([200, 200, 200, 429, 429]);
    expect(stub.hits.length - before).toBe(3);
    const res = await call(app.base);
    expect(Number(res.headers.get("retry-after"))).toBeGreaterThan(0);
    const body = (await res.json()) as { error: { code: string } };
    expect(body.error.code).toBe("rate_limited");
  });

  it("routes to the next fallback when the limit is reached", async () => {
    await app.close();
    app = await gatewayApp(limitsYaml(1, "fallbacks:\n  llm: [openai/gpt-4.1-mini, backup/llama]\n"));
    await roomInMinute(20_000);
    expect((await call(app.base)).status).toBe(200);
    const backupBefore = backup.hits.length;
    expect((await call(app.base)).status).toBe(200);
    expect(backup.hits.length).toBe(backupBefore + 1);
    const rows = await recordedRows(app);
    expect(rows.at(-1)).toMatchObject({ model_id: "backup/llama", status: "success" });
  });
});

describe("rate limits across the fleet", () => {
  let db: TestDatabase;
  const servers: SpawnedServer[] = [];
  afterAll(async () => {
    for (const s of servers) s.child.kill("SIGTERM");
    await Promise.all(servers.map((s) => s.exited));
    await db?.drop();
  });

  it("two voxgate processes on one Postgres together stay within 10 % of requests_per_minute", async () => {
    db = await createTestDatabase();
    if (!db.url) return; // PGlite: one process only; the fleet needs Postgres
    const LIMIT = 200;
    const dir = mkdtempSync(join(tmpdir(), "voxgate-limits-"));
    writeFileSync(join(dir, "voxgate.yaml"), limitsYaml(LIMIT));
    const env = { DATABASE_URL: db.url, VOXGATE_CONFIG: join(dir, "voxgate.yaml") };
    servers.push(await spawnServer(env), await spawnServer(env));
    // 400 calls take a second or two, even on a loaded machine: 20 s is room enough, and waits less.
    await roomInMinute(20_000);
    const before = stub.hits.length;
    // 2 × the limit, spread over both replicas, 16 in flight at a time.
    const bases = servers.map((s) => s.baseUrl);
    const statuses: number[] = [];
    let next = 0;
    await Promise.all(
      Array.from({ length: 16 }, async () => {
        while (next < 2 * LIMIT) {
          const i = next++;
          const res = await call(bases[i % 2] ?? "");
          await res.arrayBuffer();
          statuses.push(res.status);
        }
      }),
    );
    const served = statuses.filter((s) => s === 200).length;
    expect(statuses.filter((s) => s !== 200 && s !== 429)).toEqual([]);
    expect(stub.hits.length - before).toBe(served);
    expect(served).toBeLessThanOrEqual(LIMIT);
    expect(served).toBeGreaterThanOrEqual(LIMIT * 0.9);
  }, 120_000);
});
