import { mkdtempSync } from "node:fs";
import type { AddressInfo } from "node:net";
import { networkInterfaces, tmpdir } from "node:os";
import { join } from "node:path";
import { serve, type ServerType } from "@hono/node-server";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { withGatewayListener } from "../../src/gateway/listener.js";
import { createWebSocketServer } from "../../src/gateway/ws/upgrade.js";
import { createApp } from "../../src/http/app.js";
import { createTestApp, type TestApp } from "../support/app.js";
import { createTestDatabase } from "../support/db.js";
import { spawnServer } from "../support/spawn.js";
import { openaiChatStub } from "../support/stubs/openai-chat.js";
import type { StubServer } from "../support/stubs/stub-server.js";
import { gatewayApp, KEYS_YAML, OPERATOR_KEY, PROVIDER_KEY, recordedRows } from "./support.js";

let stub: StubServer;
beforeAll(async () => {
  stub = await openaiChatStub().start();
});
afterAll(async () => stub?.close());

const providerYaml = () => `
providers:
  openai: { api_key: "${PROVIDER_KEY}", base_url: "${stub.url}/v1" }
models:
  llm:
    openai/gpt-4.1-mini: { provider: openai, model: gpt-4.1-mini }
`;
const chat = (base: string, key?: string) =>
  fetch(`${base}/openai/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json", ...(key && { authorization: `Bearer ${key}` }) },
    body: JSON.stringify({ model: "openai/gpt-4.1-mini", messages: [{ role: "user", content: "x" }] }),
  });

/** A non-loopback address of this machine, if it has one. */
function externalAddress(): string | null {
  for (const list of Object.values(networkInterfaces())) for (const a of list ?? []) if (a.family === "IPv4" && !a.internal) return a.address;
  return null;
}

describe("auth off", () => {
  let app: TestApp;
  let server: ServerType | null = null;
  afterAll(async () => {
    server?.close();
    await app?.close();
  });

  it("serves loopback clients and refuses others 403", async () => {
    app = await createTestApp({ yaml: providerYaml() });
    const local = await app.listen();
    expect((await chat(local)).status).toBe(200);
    const ip = externalAddress();
    if (!ip) return; // no non-loopback interface to call from
    const s = await new Promise<ServerType>((resolve) => {
      const srv = serve({ fetch: createApp(app.services).fetch, port: 0, hostname: "0.0.0.0", createServer: withGatewayListener(app.services.gateway, createWebSocketServer()) }, () => resolve(srv));
    });
    server = s;
    const port = (s.address() as AddressInfo).port;
    const before = stub.hits.length;
    const res = await chat(`http://${ip}:${port}`);
    expect(res.status).toBe(403);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe("loopback_only");
    expect(stub.hits.length).toBe(before);
  });

  it("says so in the startup log", async () => {
    const db = await createTestDatabase();
    const home = mkdtempSync(join(tmpdir(), "voxgate-authoff-"));
    try {
      const server = await spawnServer({
        HOME: home,
        DATABASE_URL: db.url ?? undefined,
        VOXGATE_DB_PATH: db.url ? undefined : join(home, "db"),
        VOXGATE_CONFIG: undefined,
        VOXGATE_API_KEY: undefined,
        VOXGATE_INGEST_KEY: undefined,
      });
      server.child.kill("SIGTERM");
      await server.exited;
      expect(server.logs()).toContain("gateway routes (/openai, /anthropic, …) answer loopback clients only");
    } finally {
      await db.drop();
    }
  }, 90_000);
});

describe("sidecar (VOXGATE_COLLECTOR_URL)", () => {
  let collector: TestApp & { base: string };
  let sidecar: TestApp & { base: string };
  afterAll(async () => {
    await sidecar?.close();
    await collector?.close();
  });

  it("pushes the gateway's records to the collector with voxgate/client", async () => {
    collector = await gatewayApp(KEYS_YAML);
    // The sidecar's VOXGATE_API_KEY is the collector key (the operator's here): agents call the
    // sidecar with it, and the sidecar pushes records to the collector with it.
    sidecar = await gatewayApp(providerYaml(), { VOXGATE_COLLECTOR_URL: collector.base, VOXGATE_API_KEY: OPERATOR_KEY });
    expect(sidecar.services.gateway.sidecar).toBe(true);
    const res = await chat(sidecar.base, OPERATOR_KEY);
    expect(res.status).toBe(200);
    const id = res.headers.get("x-voxgate-request-id");
    await sidecar.services.gateway.recorder.flush();
    let rows: Awaited<ReturnType<typeof recordedRows>> = [];
    for (let i = 0; i < 100 && !rows.some((r) => r.id === id); i++) {
      await new Promise((r) => setTimeout(r, 100));
      rows = await recordedRows(collector);
    }
    expect(rows.find((r) => r.id === id)).toMatchObject({ model_id: "openai/gpt-4.1-mini", input_tokens: 12, output_tokens: 5 });
    expect((await recordedRows(sidecar)).find((r) => r.id === id)).toBeUndefined();
  });
});
