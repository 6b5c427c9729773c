import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { asc } from "drizzle-orm";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { parseEnv } from "../../src/config/env.js";
import { parseConfigText } from "../../src/config/load.js";
import { nodeSamples } from "../../src/db/schema/index.js";
import { createApp } from "../../src/http/app.js";
import type { Services } from "../../src/compose.js";
import { createServices, startWorkers, stopWorkers } from "../../src/compose.js";
import { createTestDatabase, type TestDatabase } from "../support/db.js";
import { captureLogger } from "../support/log.js";

const USER = "scraper";
const PASSWORD = "p@ss:w/rd";
const ENCODED_PASSWORD = "p%40ss%3Aw%2Frd";

const LIVEKIT_TEXT = `# HELP livekit_room_total rooms
# TYPE livekit_room_total gauge
livekit_room_total 2
livekit_participant_total{kind="sip"} 5
livekit_jitter_us_bucket{le="100"} 1
livekit_jitter_us_sum 4200
unrelated_metric 7
`;
const HOST_TEXT = `node_load1 0.5
node_memory_MemAvailable_bytes 1.5e9
node_cpu_seconds_total{cpu="0",mode="idle"} 1000
node_filesystem_size_bytes{mountpoint="/"} 1e12
`;

/** A real loopback server; counts hits per path and records Authorization headers. */
async function exporter(handler: (req: IncomingMessage, res: ServerResponse) => void) {
  const hits: string[] = [];
  const auth: (string | undefined)[] = [];
  const server: Server = createServer((req, res) => {
    hits.push(req.url ?? "");
    auth.push(req.headers.authorization);
    handler(req, res);
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  const port = (server.address() as AddressInfo).port;
  return { server, hits, auth, base: `http://127.0.0.1:${port}`, port };
}

async function waitFor(check: () => Promise<boolean>, ms = 10_000) {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error("condition not met in time");
}

describe("node scraping (VOXGATE_NODE_SCRAPE_TARGETS)", () => {
  let livekit: Awaited<ReturnType<typeof exporter>>;
  let host: Awaited<ReturnType<typeof exporter>>;
  let redirector: Awaited<ReturnType<typeof exporter>>;
  let testDb: TestDatabase;
  let services: Services | null = null;

  beforeAll(async () => {
    livekit = await exporter((_req, res) => res.end(LIVEKIT_TEXT));
    host = await exporter((req, res) => {
      const expected = `Basic ${Buffer.from(`${USER}:${PASSWORD}`).toString("base64")}`;
      if (req.headers.authorization !== expected) {
        res.statusCode = 401;
        res.end("no");
        return;
      }
      res.end(HOST_TEXT);
    });
    redirector = await exporter((_req, res) => {
      res.statusCode = 302;
      res.setHeader("location", `${livekit.base}/from-redirect`);
      res.end();
    });
    testDb = await createTestDatabase();
  });
  afterEach(async () => {
    if (services) await stopWorkers(services);
    services = null;
  });
  afterAll(async () => {
    for (const s of [livekit, host, redirector]) await new Promise((r) => s.server.close(r));
    await testDb.drop();
  });

  const boot = async (env: Record<string, string>, yaml = "workers: { node_scrape_interval_seconds: 0.2 }\n") => {
    const { log, lines } = captureLogger();
    const s = createServices({ database: testDb.database, config: parseConfigText(yaml, "t.yaml", env), env: parseEnv(env), log });
    services = s;
    await startWorkers(s);
    return { services: s, lines };
  };

  it("scrapes every target, files samples per node on one time axis, and masks credentials in logs", async () => {
    const targets = [
      `livekit-server:media-1=${livekit.base}/metrics`,
      `host-exporter:media-1=http://${USER}:${ENCODED_PASSWORD}@127.0.0.1:${host.port}/metrics`,
      "not-an-entry",
      `livekit-sip:sip-1=${redirector.base}/metrics`,
    ].join(",");
    const { services: s, lines } = await boot({ VOXGATE_NODE_SCRAPE_TARGETS: targets });
    expect(s.workers.map((w) => w.name)).toContain("node-scraper");
    const db = s.database.db;
    await waitFor(async () => (await db.select().from(nodeSamples)).filter((r) => r.metric === "up").length >= 6);
    await stopWorkers(s);

    const rows = await db.select().from(nodeSamples).orderBy(asc(nodeSamples.id));
    const up = (node: string, source: string) => rows.filter((r) => r.node === node && r.source === source && r.metric === "up").map((r) => r.value);
    expect(up("media-1", "livekit-server").every((v) => v === 1)).toBe(true);
    expect(up("media-1", "host-exporter").every((v) => v === 1)).toBe(true);
    // A redirect is a failed scrape; it is never followed.
    expect(up("sip-1", "livekit-sip").every((v) => v === 0)).toBe(true);
    expect(livekit.hits).not.toContain("/from-redirect");

    // Both sources of media-1 share one time axis.
    const times = (source: string) => new Set(rows.filter((r) => r.node === "media-1" && r.source === source).map((r) => r.ts.getTime()));
    expect([...times("host-exporter")].some((ts) => times("livekit-server").has(ts))).toBe(true);

    // The allowlist: kept series, dropped buckets and strangers.
    const metrics = new Set(rows.map((r) => r.metric));
    for (const m of ["livekit_room_total", "livekit_participant_total", "livekit_jitter_us_sum", "node_load1", "node_memory_MemAvailable_bytes", "node_cpu_seconds_total", "up"]) {
      expect(metrics.has(m), m).toBe(true);
    }
    for (const m of ["livekit_jitter_us_bucket", "unrelated_metric", "node_filesystem_size_bytes"]) expect(metrics.has(m), m).toBe(false);
    expect(rows.find((r) => r.metric === "livekit_participant_total")?.labels).toEqual({ kind: "sip" });
    expect(rows.find((r) => r.metric === "node_memory_MemAvailable_bytes")?.value).toBe(1.5e9);

    // Basic auth went as a header, decoded from the percent-encoded URL.
    expect(host.auth.every((a) => a === `Basic ${Buffer.from(`${USER}:${PASSWORD}`).toString("base64")}`)).toBe(true);

    const logText = lines.join("");
    expect(logText).toContain("node scrape targets read: 3");
    expect(lines.some((l) => l.includes('"count":3'))).toBe(true);
    expect(lines.some((l) => l.includes("node scrape target skipped") && l.includes('"entry":3'))).toBe(true);
    expect(logText).toContain("***@127.0.0.1");
    expect(logText).not.toContain(ENCODED_PASSWORD);
    expect(logText).not.toContain(PASSWORD);
    expect(logText).not.toContain(`${USER}:`);
    expect(logText).not.toContain(Buffer.from(`${USER}:${PASSWORD}`).toString("base64"));
  });

  it("exposes what it stored through GET /v1/nodes and /v1/nodes/{node}/samples", async () => {
    const { services: s } = await boot(
      { VOXGATE_NODE_SCRAPE_TARGETS: `livekit-server:media-9=${livekit.base}/metrics`, VOXGATE_API_KEY: "ops-key-0123456789abcdef" },
      "workers: { node_scrape_interval_seconds: 0.2 }\nauth:\n  api_keys:\n    - { key: tenant-key-0123456789abcdef, scopes: [read], tenant_id: acme }\n",
    );
    await waitFor(async () => (await s.database.db.select().from(nodeSamples)).some((r) => r.node === "media-9" && r.metric === "up"));
    const app = createApp(s);
    const auth = { headers: { authorization: "Bearer ops-key-0123456789abcdef" } };
    const nodes = (await (await app.request("/v1/nodes", auth)).json()) as { node: string; sources: Record<string, { up: number }> }[];
    expect(nodes.find((n) => n.node === "media-9")?.sources["livekit-server"]?.up).toBe(1);
    const samples = (await (await app.request("/v1/nodes/media-9/samples?metric=livekit_room_total&limit=1", auth)).json()) as { value: number }[];
    expect(samples).toEqual([expect.objectContaining({ metric: "livekit_room_total", value: 2, source: "livekit-server" })]);
    expect((await app.request("/v1/nodes/media-9/samples?limit=0", auth)).status).toBe(422);
    expect((await app.request("/v1/nodes")).status).toBe(401);
    const tenant = { headers: { authorization: "Bearer tenant-key-0123456789abcdef" } };
    expect((await app.request("/v1/nodes", tenant)).status).toBe(403);
    expect((await app.request("/v1/nodes/media-9/samples", tenant)).status).toBe(403);
  });

  it("starts no worker and makes no request when the variable is unset or empty", async () => {
    const before = livekit.hits.length;
    const envs: Record<string, string>[] = [{}, { VOXGATE_NODE_SCRAPE_TARGETS: "" }, { VOXGATE_NODE_SCRAPE_TARGETS: " " }];
    for (const env of envs) {
      const { services: s } = await boot(env);
      expect(s.workers.some((w) => w.name === "node-scraper")).toBe(false);
      await stopWorkers(s);
    }
    await new Promise((r) => setTimeout(r, 300));
    expect(livekit.hits.length).toBe(before);
  });

  it("starts no worker when workers.enabled is false", async () => {
    const before = livekit.hits.length;
    const { services: s } = await boot(
      { VOXGATE_NODE_SCRAPE_TARGETS: `livekit-server:n=${livekit.base}/metrics` },
      "workers: { enabled: false, node_scrape_interval_seconds: 0.2 }\n",
    );
    expect(s.workers.some((w) => w.name === "node-scraper")).toBe(false);
    await new Promise((r) => setTimeout(r, 400));
    expect(livekit.hits.length).toBe(before);
  });
});
