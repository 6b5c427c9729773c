import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { staticKeysFromConfig } from "../../src/auth/static-keys.js";
import { parseEnv } from "../../src/config/env.js";
import { ConfigError, parseConfigText } from "../../src/config/load.js";
import { authGate } from "../../src/diagnostics/check.js";
import { useTestApp } from "../support/app.js";
import { runCli } from "../support/spawn.js";
import { http, json } from "./http.js";

// Agents get an ingest-only key (VOXGATE_INGEST_KEY), never the operator's `*` key.
const OPERATOR = "operator-key-0123456789abcdef";
const AGENT_1 = "agent-fleet-one-0123456789";
const AGENT_2 = "agent-fleet-two-0123456789";
const RECORD = { id: "3f0f4a52-8c1d-4a55-9f59-6f4d8a0c1e01", timestamp: new Date().toISOString(), modality: "llm", model_id: "openai/gpt-4.1-mini", input_tokens: 10, output_tokens: 5 };

describe("VOXGATE_INGEST_KEY: what agents hold can only push telemetry", () => {
  const t = useTestApp({ env: { VOXGATE_API_KEY: OPERATOR, VOXGATE_INGEST_KEY: ` ${AGENT_1} ,${AGENT_2},` } });

  it("each comma-separated key ingests", async () => {
    expect((await json<{ accepted: number }>(http(t, "POST", "/v1/ingest", { key: AGENT_1, body: [RECORD] }), 200)).accepted).toBe(1);
    expect((await json<{ duplicates: number }>(http(t, "POST", "/v1/ingest", { key: AGENT_2, body: [RECORD] }), 200)).duplicates).toBe(1);
    expect((await http(t, "POST", "/v1/agents/heartbeat", { key: AGENT_1, body: { agent_id: "w1" } })).status).toBe(202);
  });

  it("cannot mint keys, read any tenant's billing or spend, or edit the rate card", async () => {
    expect((await http(t, "POST", "/v1/api-keys", { key: AGENT_1, body: { name: "x", role: "admin" } })).status).toBe(403);
    expect((await http(t, "GET", "/v1/api-keys", { key: AGENT_1 })).status).toBe(403);
    expect((await http(t, "GET", "/v1/billing/usage", { key: AGENT_1 })).status).toBe(403);
    expect((await http(t, "GET", "/v1/costs", { key: AGENT_1 })).status).toBe(403);
    const rule = { modality: "llm", markup: 0 };
    expect((await http(t, "POST", "/v1/billing/rate-card/rules", { key: AGENT_1, body: rule })).status).toBe(403);
    expect((await http(t, "POST", "/v1/providers", { key: AGENT_2, body: { provider_id: "p", provider_type: "openai", api_key: "sk-0123456789abcdef0123" } })).status).toBe(403);
    // The operator's key still does all of it.
    expect((await http(t, "GET", "/v1/billing/usage", { key: OPERATOR })).status).toBe(200);
  });

  it("refuses an ingest key in the vk_ namespace at startup, naming its position and not its value", () => {
    const config = parseConfigText("", "t.yaml", {});
    const env = parseEnv({ VOXGATE_INGEST_KEY: `${AGENT_1},vk_looks-minted-0123456789` });
    expect(() => staticKeysFromConfig(config, env)).toThrow(ConfigError);
    expect(() => staticKeysFromConfig(config, env)).toThrow(/VOXGATE_INGEST_KEY entry 2 of 2 must not start with "vk_"/);
  });

  it("voxgate check warns when a collector has only `*` keys", () => {
    const config = parseConfigText("", "t.yaml", {});
    const collector = { DATABASE_URL: "postgres://db/voxgate" };
    expect(authGate(config, parseEnv({ ...collector, VOXGATE_API_KEY: OPERATOR }))).toMatchObject({ status: "WARN", detail: expect.stringContaining("VOXGATE_INGEST_KEY") });
    expect(authGate(config, parseEnv({ ...collector, VOXGATE_API_KEY: OPERATOR, VOXGATE_INGEST_KEY: AGENT_1 })).status).toBe("PASS");
    // Single node (no collector): nobody pushes, so a lone `*` key is fine.
    expect(authGate(config, parseEnv({ VOXGATE_API_KEY: OPERATOR })).status).toBe("PASS");
  });

  it("voxgate keys new-static prints only the key on stdout and says which variable is which", async () => {
    const out = await runCli(["keys", "new-static"]);
    expect(out.code).toBe(0);
    expect(out.stdout.trim()).toMatch(/^[A-Za-z0-9_]{40,}$/);
    expect(out.stderr).toMatch(/VOXGATE_INGEST_KEY[^\n]*ingest only[^\n]*agents/);
    expect(out.stderr).toMatch(/VOXGATE_API_KEY[^\n]*operator[^\n]*never give it to agents/);
  });

  it("the README and docker-compose give agents the ingest key, and keep the README's first screen", () => {
    const readme = readFileSync(new URL("../../README.md", import.meta.url), "utf8");
    const firstScreen = readme.split("\n").slice(0, 12).join("\n");
    expect(firstScreen).toContain("npm ci && npm start");
    expect(firstScreen).toContain("npm test");
    const deployment = readme.slice(readme.indexOf("## Deployment"), readme.indexOf("## CLI"));
    expect(deployment).toContain("export VOXGATE_INGEST_KEY=$(npx voxgate keys new-static)");
    expect(deployment).not.toMatch(/VOXGATE_API_KEY[^\n]*the ingest key/i);
    expect(deployment).toMatch(/VOXGATE_API_KEY=<the VOXGATE_INGEST_KEY value>/);
    const compose = readFileSync(new URL("../../docker-compose.yml", import.meta.url), "utf8");
    expect(compose).toMatch(/^\s+VOXGATE_INGEST_KEY: \$\{VOXGATE_INGEST_KEY/m);
    expect(compose).not.toMatch(/VOXGATE_API_KEY[^\n]*ingest key/);
  });
});

// A short static key is refused at startup with its position, never its value.
describe("static keys shorter than 16 characters", () => {
  it("stop startup, naming the key's position and never its value", async () => {
    const yaml = "auth:\n  api_keys:\n    - long-enough-key-0123456789\n    - { key: short-key-123, scopes: [read] }\n";
    const config = parseConfigText(yaml, "t.yaml", {});
    expect(() => staticKeysFromConfig(config, {})).toThrow(/auth\.api_keys\.1 is 13 characters long; static keys must have at least 16/);
    expect(() => staticKeysFromConfig(parseConfigText("", "t.yaml", {}), { VOXGATE_API_KEY: "tiny" })).toThrow(/VOXGATE_API_KEY is 4 characters/);

    const run = await runCli(["serve", "--port", "0", "--host", "127.0.0.1"], { VOXGATE_API_KEY: undefined, VOXGATE_INGEST_KEY: `${AGENT_1},short-agent-key`, VOXGATE_DB_PATH: "/nonexistent/never-opened" });
    expect(run.code).toBe(1);
    expect(run.stderr + run.stdout).toContain("VOXGATE_INGEST_KEY entry 2 of 2 is 15 characters long");
    expect(run.stderr + run.stdout).not.toContain("short-agent-key");
  });
});
