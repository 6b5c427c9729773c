import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { staticKeysFromConfig } from "../../src/auth/static-keys.js";
import { ConfigError, findConfigFile, loadConfig, parseConfigText } from "../../src/config/load.js";

describe("configuration loader", () => {
  it("starts empty without a file", () => {
    const home = mkdtempSync(join(tmpdir(), "vg-home-"));
    const cwd = process.cwd();
    process.chdir(mkdtempSync(join(tmpdir(), "vg-cwd-")));
    try {
      const loaded = loadConfig({ home, env: {} });
      if (loaded.path !== null && !loaded.path.startsWith("/etc/")) throw new Error(`unexpected ${loaded.path}`);
      if (loaded.path === null) {
        expect(loaded.config.providers).toEqual({});
        expect(loaded.config.models).toEqual({ stt: {}, llm: {}, tts: {} });
        expect(loaded.config.serve.port).toBe(8080);
      }
    } finally {
      process.chdir(cwd);
    }
  });

  it("searches ./voxgate.yaml before ~/.config/voxgate/voxgate.yaml; VOXGATE_CONFIG wins", () => {
    const home = mkdtempSync(join(tmpdir(), "vg-home-"));
    mkdirSync(join(home, ".config", "voxgate"), { recursive: true });
    writeFileSync(join(home, ".config", "voxgate", "voxgate.yaml"), "serve: { port: 9001 }\n");
    const cwd = process.cwd();
    const work = mkdtempSync(join(tmpdir(), "vg-cwd-"));
    process.chdir(work);
    try {
      expect(findConfigFile(undefined, home)).toBe(join(home, ".config", "voxgate", "voxgate.yaml"));
      writeFileSync(join(work, "voxgate.yaml"), "serve: { port: 9002 }\n");
      expect(loadConfig({ home, env: {} }).config.serve.port).toBe(9002);
      const explicit = join(work, "other.yaml");
      writeFileSync(explicit, "serve: { port: 9003 }\n");
      expect(loadConfig({ explicitPath: explicit, home, env: {} }).config.serve.port).toBe(9003);
      expect(() => loadConfig({ explicitPath: join(work, "missing.yaml"), home, env: {} })).toThrow(ConfigError);
    } finally {
      process.chdir(cwd);
    }
  });

  it("interpolates ${VAR} and names the variable and key when it is unset", () => {
    const text = "providers:\n  openai: { api_key: \"${OPENAI_KEY}\" }\n";
    expect(parseConfigText(text, "v.yaml", { OPENAI_KEY: "sk-123" }).providers.openai?.api_key).toBe("sk-123");
    expect(() => parseConfigText(text, "v.yaml", {})).toThrow(/v\.yaml: providers\.openai\.api_key uses \$\{OPENAI_KEY\}.*OPENAI_KEY is not set/);
  });

  it("names the file and key path of a schema error", () => {
    expect(() => parseConfigText("serve: { port: 'eighty' }\n", "bad.yaml", {})).toThrow(/bad\.yaml: serve\.port/);
    expect(() => parseConfigText("projects: { p: { budget_action: explode } }\n", "bad.yaml", {})).toThrow(
      /bad\.yaml: projects\.p\.budget_action/,
    );
    expect(() => parseConfigText("providers: [1, 2\n", "bad.yaml", {})).toThrow(/bad\.yaml: invalid YAML/);
  });

  it("parses the documented example, including static keys of every form", () => {
    const config = parseConfigText(
      `
providers:
  openai: { api_key: "sk" }
  gpu-box: { type: openai_compatible, base_url: "http://10.0.0.7:8000/v1" }
models:
  llm: { openai/gpt-4.1-mini: { provider: openai, model: gpt-4.1-mini } }
stacks:
  fast: { llm: openai/gpt-4.1-mini }
projects:
  support: { name: Support line, daily_budget: 25, budget_action: block, default_stack: fast, tags: [prod] }
fallbacks:
  llm: [openai/gpt-4.1-mini, gpu-box/llama-3.1-8b]
rate_limiting:
  openai: { requests_per_minute: 3000 }
auth:
  api_keys:
    - ops-key-0123456789ab
    - { key: read-key-0123456789ab, scopes: [read] }
    - { key: acme-key-0123456789ab, scopes: [read, write], tenant_id: acme }
`,
      "design.yaml",
      {},
    );
    const keys = [...staticKeysFromConfig(config, { VOXGATE_API_KEY: "env-key-0123456789ab" }).values()].map((k) => k.context);
    expect(keys.map((k) => [k.scopes, k.tenantId])).toEqual([
      [["*"], null],
      [["read"], null],
      [["read", "write"], "acme"],
      [["*"], null],
    ]);
  });

  it("refuses a static key starting with vk_", () => {
    const config = parseConfigText("auth: { api_keys: [vk_not_allowed] }\n", "k.yaml", {});
    expect(() => staticKeysFromConfig(config, {})).toThrow(/must not start with "vk_"/);
    expect(() => staticKeysFromConfig(parseConfigText("", "k.yaml", {}), { VOXGATE_API_KEY: "vk_env" })).toThrow(ConfigError);
  });
});
