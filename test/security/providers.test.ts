import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { addressClass, embeddedIpv4 } from "../../src/manage/url-policy.js";
import { type TestApp, useTestApp } from "../support/app.js";
import { authYaml, KEYS, SECRET_ENV } from "../support/fixtures.js";
import { captureLogger } from "../support/log.js";
import { startStubProvider } from "../manage/stub-provider.js";
import { http, json } from "./http.js";

const OPERATOR = KEYS.ops;
const ACME_READ = KEYS.acmeReader;
const ACME_WRITE = KEYS.acmeWriter;
const KEY = "sk-abcdefabcdefabcdef0123";

type ApiErr = { error: { code: string; message: string; details?: { reason?: string } } };

function yaml(stubOrigin: string, extra = "") {
  return `
${authYaml("ops", "acmeReader", "acmeWriter")}providers:
  openai: { api_key: "sk-yaml-openai-abcdefghijklmnop" }
  gpu-box: { type: openai_compatible, base_url: "http://10.0.0.7:8000/v1" }
  local-stub: { type: openai_compatible, base_url: "${stubOrigin}/ok/v1" }
  meta: { type: openai_compatible, base_url: "http://169.254.169.254/v1" }
models:
  llm: { openai/gpt-4.1-mini: { provider: openai, model: gpt-4.1-mini } }
serve: { provider_base_url_hosts: ["169.254.169.254", "[fd00:ec2::254]", "llm.listed.example"] }
${extra}`;
}

const create = (t: TestApp, provider_id: string, base_url: string, key = OPERATOR, provider_type = "openai_compatible") =>
  http(t, "POST", "/v1/providers", { key, body: { provider_id, provider_type, api_key: KEY, base_url } });

describe("provider base_url and tests", () => {
  let stub: Awaited<ReturnType<typeof startStubProvider>>;
  const captured = captureLogger();
  beforeAll(async () => {
    stub = await startStubProvider();
  });
  afterAll(async () => {
    await stub.close();
  });
  const t = useTestApp(() => ({ yaml: yaml(new URL(stub.url("/")).origin), env: SECRET_ENV, log: captured.log }));

  // 9.13: IPv6 forms that embed IPv4, unique-local, private and CGNAT ranges.
  it("refuses IPv6 forms that embed a blocked IPv4, unique-local IPv6, private and CGNAT IPv4 (9.13)", async () => {
    const refused = [
      "http://[::7f00:1]/v1",
      "http://[::127.0.0.1]/v1",
      "http://[64:ff9b::7f00:1]/v1",
      "http://[2002:7f00:1::]/v1",
      "http://[::ffff:0:7f00:1]/v1",
      "http://[2002:a9fe:a9fe::]/v1",
      "http://[fc00::1]/v1",
      "http://[fd12:3456:789a::1]/v1",
      "http://10.1.2.3/v1",
      "http://172.16.5.4/v1",
      "http://172.31.255.1/v1",
      "http://192.168.1.10/v1",
      "http://100.64.0.1/v1",
      "http://100.127.255.254/v1",
    ];
    for (const [i, url] of refused.entries()) {
      const err = await json<ApiErr>(create(t, `p-ssrf-${i}`, url), 400);
      expect(err.error.code, url).toBe("unpermitted_base_url");
      expect(err.error.message, url).toContain("serve.provider_base_url_hosts");
    }
    // Public addresses, in any of those forms, stay allowed.
    for (const [i, url] of ["http://[64:ff9b::808:808]/v1", "http://172.32.0.1/v1", "http://100.128.0.1/v1", "http://[2606:4700::1111]/v1"].entries()) {
      await json(create(t, `p-public-${i}`, url), 200);
    }
  });

  it("classifies embedded and ranged addresses (9.13)", () => {
    expect(embeddedIpv4("::7f00:1")).toBe("127.0.0.1");
    expect(embeddedIpv4("64:ff9b::a9fe:a9fe")).toBe("169.254.169.254");
    expect(embeddedIpv4("2002:c0a8:101::1")).toBe("192.168.1.1");
    expect(embeddedIpv4("2606:4700::1111")).toBeNull();
    expect(addressClass("::ffff:169.254.169.254")).toBe("metadata");
    expect(addressClass("2002:a9fe:a9fe::")).toBe("metadata");
    expect(addressClass("fd00:ec2::254")).toBe("metadata");
    expect(addressClass("100.100.100.200")).toBe("metadata");
    expect(addressClass("100.64.0.1")).toBe("internal");
    expect(addressClass("::1")).toBe("internal");
    expect(addressClass("8.8.8.8")).toBeNull();
  });

  // A host a voxgate.yaml provider already uses is trusted like a listed host.
  it("permits a host a voxgate.yaml provider already uses, on create and on update (8.3)", async () => {
    await json(create(t, "gpu-box-2", "http://10.0.0.7:9000/v1"), 200);
    await json(create(t, "stub-2", stub.url("/ok/v2")), 200);
    await json(create(t, "moving", "https://llm.vendor.example/v1"), 200);
    await json(http(t, "PATCH", "/v1/providers/moving", { key: OPERATOR, body: { base_url: "http://10.0.0.7:8001/v1" } }), 200);
    // A private host no provider uses stays refused, and the answer names the config key.
    const err = await json<ApiErr>(create(t, "gpu-box-3", "http://10.0.0.8:8000/v1"), 400);
    expect(err.error.message).toContain("serve.provider_base_url_hosts");
    const move = await json<ApiErr>(http(t, "PATCH", "/v1/providers/moving", { key: OPERATOR, body: { base_url: "http://10.0.0.8:8001/v1" } }), 400);
    expect(move.error.message).toContain("serve.provider_base_url_hosts");
  });

  it("refuses cloud metadata addresses whatever the configuration lists or uses (8.3)", async () => {
    for (const [i, url] of ["http://169.254.169.254/v1", "http://[fd00:ec2::254]/v1", "http://[::ffff:a9fe:a9fe]/v1", "http://metadata.google.internal/v1"].entries()) {
      const err = await json<ApiErr>(create(t, `meta-${i}`, url), 400);
      expect(err.error.details?.reason, url).toBe("metadata_address");
      expect(err.error.message).toContain("serve.provider_base_url_hosts");
    }
    // Not even through the test route, nor as the yaml provider that names it.
    expect((await http(t, "POST", "/v1/providers/test", { key: OPERATOR, body: { provider_type: "openai_compatible", api_key: KEY, base_url: "http://169.254.169.254/v1" } })).status).toBe(400);
    const yamlMeta = await json<{ status: string }>(http(t, "POST", "/v1/providers/meta/test", { key: OPERATOR }), 200);
    expect(yamlMeta.status).toBe("failed");
  });

  // 9.11: the origin (scheme, host, port) is what a stored key was entered for.
  it("a stored key does not move to another port or to plain http without being re-entered (9.11)", async () => {
    await json(create(t, "oa", "https://proxy.vendor.example/v1", OPERATOR, "openai"), 200);
    for (const base_url of ["http://proxy.vendor.example/v1", "https://proxy.vendor.example:8443/v1", "http://api.openai.com/v1", "https://api.openai.com:444/v1"]) {
      const err = await json<ApiErr>(http(t, "PATCH", "/v1/providers/oa", { key: OPERATOR, body: { base_url } }), 400);
      expect(err.error.message, base_url).toContain("serve.provider_base_url_hosts");
    }
    // Same origin, another path; the vendor's default origin; a listed host: permitted.
    for (const base_url of ["https://proxy.vendor.example/v2", "https://api.openai.com/v1", "https://llm.listed.example:8443/v1"]) {
      await json(http(t, "PATCH", "/v1/providers/oa", { key: OPERATOR, body: { base_url } }), 200);
    }
    // With a new key the origin may change.
    await json(http(t, "PATCH", "/v1/providers/oa", { key: OPERATOR, body: { base_url: "http://proxy.vendor.example:8080/v1", api_key: KEY } }), 200);
  });

  it("answers one neutral message for refused, closed and each HTTP status; the detail goes to the log (9.13)", async () => {
    const closed = createServer();
    await new Promise<void>((r) => closed.listen(0, "127.0.0.1", () => r()));
    const closedPort = (closed.address() as AddressInfo).port;
    await new Promise<void>((r) => closed.close(() => r()));
    const targets = [stub.url("/denied/v1"), stub.url("/echo/v1"), stub.url("/redirect/v1"), stub.url("/missing/v1"), `http://127.0.0.1:${closedPort}/v1`];
    const messages = new Set<string>();
    for (const base_url of targets) {
      const res = await json<{ status: string; message: string; detail?: string }>(
        http(t, "POST", "/v1/providers/test", { key: OPERATOR, body: { provider_type: "openai_compatible", api_key: KEY, base_url } }),
        200,
      );
      expect(res.status).toBe("failed");
      expect(res.detail).toBeUndefined();
      messages.add(res.message);
    }
    expect(messages.size).toBe(1);
    const logged = captured.lines.filter((l) => l.includes("provider test failed")).join("\n");
    expect(logged).toContain("HTTP 401");
    expect(logged).toContain("HTTP 500");
    expect(logged).toContain("ECONNREFUSED");
    expect(logged).not.toContain(KEY);
  });

  // 9.8: provider setup is the operator's; masking shows at most the last 4 characters.
  it("tenant keys get 403 on provider routes and no provider names in status or metrics (9.8)", async () => {
    for (const path of ["/v1/providers", "/v1/providers/gpu-box"]) {
      expect((await http(t, "GET", path, { key: ACME_READ })).status, path).toBe(403);
    }
    expect((await http(t, "POST", "/v1/providers/gpu-box/test", { key: ACME_WRITE })).status).toBe(403);
    for (const path of ["/v1/status", "/api/status", "/v1/metrics"]) {
      const text = await (await http(t, "GET", path, { key: ACME_READ })).text();
      for (const name of ["gpu-box", "local-stub", "10.0.0.7"]) expect(text, `${path} ${name}`).not.toContain(name);
    }
    const status = await json<{ providers: Record<string, unknown> }>(http(t, "GET", "/v1/status", { key: ACME_READ }), 200);
    expect(status.providers).toEqual({});
    // The operator still sees everything.
    const ops = await json<{ providers: { provider_id: string; base_url: string | null }[] }>(http(t, "GET", "/v1/providers", { key: OPERATOR }), 200);
    expect(ops.providers.find((p) => p.provider_id === "gpu-box")?.base_url).toBe("http://10.0.0.7:8000/v1");
  });

  it("masks keys to at most their last 4 characters, and shows nothing of a key shorter than 20 (9.8)", async () => {
    const short = await json<{ api_key_masked: string }>(
      http(t, "POST", "/v1/providers", { key: OPERATOR, body: { provider_id: "short", provider_type: "openai", api_key: "sk-ABCDEFGHIJ" } }),
      200,
    );
    expect(short.api_key_masked).not.toMatch(/[A-J]/);
    const long = await json<{ api_key_masked: string }>(
      http(t, "POST", "/v1/providers", { key: OPERATOR, body: { provider_id: "long", provider_type: "openai", api_key: "sk-proj-ABCDEFGHIJKLMNOPQRSTUVWXYZ" } }),
      200,
    );
    expect(long.api_key_masked.replace(/[^A-Za-z0-9-]/g, "")).toBe("WXYZ");
    const list = JSON.stringify(await json(http(t, "GET", "/v1/providers", { key: OPERATOR }), 200));
    expect(list).not.toContain("sk-y");
    expect(list).not.toContain("sk-p");
  });
});
