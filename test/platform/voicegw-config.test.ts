import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { staticKeysFromConfig } from "../../src/auth/static-keys.js";
import { ConfigError, parseConfigText, parseConfigTextWithWarnings } from "../../src/config/load.js";
import { listEffectiveProviders } from "../../src/manage/registry.js";
import { VENDORS } from "../../src/manage/vendors.js";
import { createTestDatabase, type TestDatabase } from "../support/db.js";
import { runCli, spawnServer } from "../support/spawn.js";

/** A voicegateway configuration (our own fixture with each of its shapes) loads unchanged. */
const FIXTURE = fileURLToPath(new URL("./fixtures/voicegw.yaml", import.meta.url));
const ADMIN_TOKEN = "voicegw-admin-token-0123456789abcdef";
const text = readFileSync(FIXTURE, "utf8");

describe("voicegw.yaml shapes", () => {
  const { config, warnings } = parseConfigTextWithWarnings(text, "voicegw.yaml", {});

  it("reads {token, name, scopes} keys as static keys, beside {key, scopes, tenant_id}", () => {
    const keys = staticKeysFromConfig(config, {});
    expect(keys.size).toBe(2);
    const actors = [...keys.values()].map((k) => `${k.context.actor} ${k.context.scopes.join(",")}`);
    expect(actors).toEqual(["static:admin read,write,admin", "static:agents ingest"]);
    const mixed = parseConfigText(`auth:\n  api_keys:\n    - { token: ${ADMIN_TOKEN}, name: a }\n    - { key: other-key-0123456789abcdef, scopes: [read], tenant_id: acme }\n`, "k.yaml", {});
    expect(staticKeysFromConfig(mixed, {}).size).toBe(2);
    // The length rule holds for the token form too; the error names the position, never the key.
    const short = parseConfigText("auth:\n  api_keys:\n    - { token: short-token, name: a }\n", "k.yaml", {});
    expect(() => staticKeysFromConfig(short, {})).toThrow(/auth\.api_keys\.0 is 11 characters/);
    expect(() => parseConfigText("auth:\n  api_keys:\n    - { token: x-0123456789abcdef, key: y-0123456789abcdef }\n", "k.yaml", {})).toThrow(ConfigError);
  });

  it("accepts budget_action throttle (with throttle_stack) beside warn and block", () => {
    expect(config.projects.support?.budget_action).toBe("throttle");
    expect(config.projects.support?.throttle_stack).toBe("cheap");
    expect(config.projects.sales?.budget_action).toBe("block");
  });

  it("defaults a model entry's model to the id after the provider", () => {
    expect(config.models.tts["local/kokoro"]).toMatchObject({ provider: "kokoro", model: "kokoro" });
    expect(config.models.tts["local/piper"]?.model).toBe("piper");
    expect(config.models.llm["openai/gpt-4.1-mini"]?.model).toBe("gpt-4.1-mini");
  });

  it("reads rate_limits as rate_limiting; rate_limiting wins when both are set (and says so)", () => {
    expect(config.rate_limiting).toEqual({ openai: { requests_per_minute: 600 } });
    const both = parseConfigTextWithWarnings(
      "rate_limits: { openai: { requests_per_minute: 1 } }\nrate_limiting: { openai: { requests_per_minute: 2 } }\n",
      "b.yaml",
      {},
    );
    expect(both.config.rate_limiting.openai?.requests_per_minute).toBe(2);
    expect(both.warnings).toEqual(["b.yaml: rate_limits is ignored: rate_limiting is also set and wins"]);
  });

  it("types whisper, kokoro, piper, ollama and local as self-hosted and assemblyai as a cloud vendor", async () => {
    const db = await createTestDatabase();
    try {
      const providers = await listEffectiveProviders({ config, database: db.database });
      const byId = Object.fromEntries(providers.map((p) => [p.providerId, p]));
      for (const id of ["whisper", "kokoro", "piper", "ollama", "local"]) {
        expect(byId[id], id).toMatchObject({ providerType: "openai_compatible", location: "local", configured: true });
      }
      expect(byId.assemblyai).toMatchObject({ providerType: "assemblyai", location: "cloud", configured: true });
      expect(new URL(VENDORS.assemblyai.defaultBaseUrl ?? "").host).toBe("api.assemblyai.com");
    } finally {
      await db.drop();
    }
  });

  it("warns once per unused key, never fatal; a typo in a used key fails with its path", () => {
    expect(warnings).toEqual([
      "voicegw.yaml: latency is not used by Voxgate and is ignored",
      "voicegw.yaml: dashboard is not used by Voxgate and is ignored",
      "voicegw.yaml: observability is not used by Voxgate and is ignored",
      "voicegw.yaml: cost_tracking.daily_budget_alert is not used by Voxgate and is ignored",
    ]);
    expect(() => parseConfigText("projects: { support: { budget_actoin: block } }\n", "t.yaml", {})).toThrow(/t\.yaml: projects\.support\.budget_actoin: unknown key/);
    expect(() => parseConfigText("rate_limitng: {}\n", "t.yaml", {})).toThrow(/t\.yaml: rate_limitng: unknown key/);
    expect(() => parseConfigText("cost_tracking: { enabeld: true }\n", "t.yaml", {})).toThrow(/cost_tracking\.enabeld/);
    expect(() => parseConfigText("projects: { p: { budget_action: explode } }\n", "t.yaml", {})).toThrow(/projects\.p\.budget_action/);
  });
});

describe("voxgate check and the server start with the fixture", () => {
  let testDb: TestDatabase;
  const home = mkdtempSync(join(tmpdir(), "vg-voicegw-home-"));
  const env = () => ({
    HOME: home,
    VOXGATE_CONFIG: FIXTURE,
    DATABASE_URL: testDb.url ?? undefined,
    VOXGATE_DB_PATH: testDb.url ? undefined : join(home, "db"),
  });
  beforeAll(async () => {
    testDb = await createTestDatabase();
  });
  afterAll(async () => {
    await testDb.drop();
  });

  it("voxgate check loads it (the gates run; unreachable providers may fail, the config does not)", async () => {
    const result = await runCli(["check", "--json"], env());
    expect(result.stderr).not.toMatch(/ConfigError|voicegw\.yaml: [a-z_.]+: /);
    expect(result.stderr).toContain("latency is not used by Voxgate");
    const run = JSON.parse(result.stdout) as { verdict: string; gates: { gateId: string }[] };
    expect(run.gates.length).toBeGreaterThan(0);
  }, 120_000);

  it("serve starts, logs each unused key once as a warning, and accepts the token key", async () => {
    const server = await spawnServer(env());
    try {
      const res = await fetch(`${server.baseUrl}/v1/projects/support`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
      expect(res.status).toBe(200);
      expect(((await res.json()) as { budget_action: string }).budget_action).toBe("throttle");
      const logs = server.logs();
      for (const key of ["latency", "dashboard", "observability", "cost_tracking.daily_budget_alert"]) {
        expect(logs.split(`${key} is not used by Voxgate`).length - 1, key).toBe(1);
      }
      expect(logs).not.toContain(ADMIN_TOKEN);
    } finally {
      server.child.kill("SIGTERM");
      await server.exited;
    }
  }, 120_000);
});
