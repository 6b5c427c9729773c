import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "../support/db.js";
import { runCli, spawnServer } from "../support/spawn.js";

describe("the voxgate process", () => {
  let testDb: TestDatabase;
  const home = mkdtempSync(join(tmpdir(), "vg-daemon-home-"));
  const baseEnv = () => ({
    HOME: home,
    VOXGATE_CONFIG: undefined,
    DATABASE_URL: testDb.url ?? undefined,
    VOXGATE_DB_PATH: testDb.url ? undefined : join(home, "db"),
  });

  beforeAll(async () => {
    testDb = await createTestDatabase();
  });
  afterAll(async () => {
    await testDb.drop();
  });

  it("serves /health, says when no config is found, masks nothing secret, and exits 0 on SIGTERM", async () => {
    const server = await spawnServer({ ...baseEnv(), VOXGATE_API_KEY: "daemon-test-key-0123456789" });
    const health = (await (await fetch(`${server.baseUrl}/health`)).json()) as { status: string };
    expect(health.status).toBe("ok");
    const unauth = await fetch(`${server.baseUrl}/v1/api-keys`);
    expect(unauth.status).toBe(401);
    await fetch(`${server.baseUrl}/v1/api-keys`, { headers: { authorization: "Bearer daemon-test-key-0123456789" } });
    server.child.kill("SIGTERM");
    expect(await server.exited).toBe(0);
    const logs = server.logs();
    expect(logs).toContain("no voxgate.yaml found");
    expect(logs).toContain('"route":"/v1/api-keys"');
    expect(logs).not.toContain("daemon-test-key-0123456789");
    if (testDb.url) expect(logs).not.toMatch(/postgres:\/\/[^"]*:[^*"][^"]*@/);
  }, 120_000); // spawns voxgate processes: tsx start is slow on a loaded machine

  it("voxgate keys create | list | revoke | new-static work straight on the database", async () => {
    const created = await runCli(["keys", "create", "--name", "cli fleet", "--tenant", "acme"], baseEnv());
    expect(created.code, created.stderr).toBe(0);
    const key = JSON.parse(created.stdout) as { id: string; plaintext: string; tenant_id: string };
    expect(key.plaintext).toMatch(/^vk_/);
    expect(key.tenant_id).toBe("acme");

    const listed = await runCli(["keys", "list"], baseEnv());
    expect(listed.code).toBe(0);
    expect(listed.stdout).toContain(key.id);
    expect(listed.stdout).not.toContain(key.plaintext);

    const revoked = await runCli(["keys", "revoke", key.id], baseEnv());
    expect(revoked.code, revoked.stderr).toBe(0);
    const active = await runCli(["keys", "list", "--active"], baseEnv());
    expect(active.stdout).not.toContain(key.id);
    const missing = await runCli(["keys", "revoke", "key_missing"], baseEnv());
    expect(missing.code, missing.stderr).toBe(2);

    const fresh = await runCli(["keys", "new-static"], baseEnv());
    expect(fresh.stdout.trim()).toMatch(/^[A-Za-z0-9_]{40,}$/);
    expect(fresh.stdout.startsWith("vk_")).toBe(false);
    // Six CLI processes, each compiling the sources with tsx: generous on a shared, busy machine.
  }, 120_000);

  it("a configuration error stops startup with the variable and key named", async () => {
    const dir = mkdtempSync(join(tmpdir(), "vg-badcfg-"));
    const file = join(dir, "voxgate.yaml");
    writeFileSync(file, 'providers:\n  openai: { api_key: "${SURELY_UNSET_VAR_XYZ}" }\n');
    const result = await runCli(["serve", "--port", "0"], { ...baseEnv(), VOXGATE_CONFIG: file });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain("SURELY_UNSET_VAR_XYZ");
    expect(result.stderr).toContain("providers.openai.api_key");
  }, 120_000); // spawns voxgate processes: tsx start is slow on a loaded machine
});
