import { randomUUID } from "node:crypto";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { sql } from "drizzle-orm";
import { beforeAll, describe, expect, it } from "vitest";
import { VoxgateClient } from "../../src/client/index.js";
import { DropOldestQueue } from "../../src/client/queue.js";
import { useTestApp } from "../support/app.js";
import { ACME, AUTH_YAML, rows } from "../ingest/helpers.js";

const rec = (session = "c-session") => ({
  id: randomUUID(),
  timestamp: Date.now() / 1000,
  modality: "llm" as const,
  model_id: "openai/gpt-4.1-mini",
  input_tokens: 10,
  output_tokens: 5,
  cost_usd: 0.0001,
  session_id: session,
});

/** A loopback stand-in collector that fails the first `failures` posts with 503, then answers 200. */
async function flakyCollector(failures: number) {
  const seen: { path: string; auth: string | undefined; rows: number }[] = [];
  let remaining = failures;
  const server: Server = createServer((req, res) => {
    let body = "";
    req.on("data", (c) => (body += c));
    req.on("end", () => {
      if (remaining > 0) {
        remaining--;
        res.writeHead(503, { "content-type": "application/json" }).end('{"error":{"code":"unavailable","message":"x"}}');
        return;
      }
      const parsed = JSON.parse(body) as unknown;
      seen.push({ path: req.url ?? "", auth: req.headers.authorization, rows: Array.isArray(parsed) ? parsed.length : 1 });
      res.writeHead(200, { "content-type": "application/json" }).end('{"accepted":0}');
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { url, seen, close: () => new Promise<void>((r) => server.close(() => r())) };
}

describe("voxgate/client against a real collector", () => {
  let base: string;
  const t = useTestApp({ yaml: AUTH_YAML });
  beforeAll(async () => {
    base = await t.listen();
  });
  const db = () => t.services.database.db;

  it("batches records, turns and dead-air to the collector; flush() delivers everything", async () => {
    const client = new VoxgateClient({ collectorUrl: base, apiKey: ACME, batchSize: 300, flushIntervalMs: 60_000 });
    const now = Date.now();
    for (let i = 0; i < 1000; i++) client.record(rec("c-batch"));
    for (let i = 0; i < 5; i++) {
      client.turn({ session_id: "c-batch", turn_index: i, caller_speak_start_ms: now, caller_speak_end_ms: now + 10, room_name: "c-room" });
    }
    client.deadAir({ session_id: "c-batch", started_at_ms: now, duration_ms: 2500, threshold_used_ms: 2000 });
    await client.flush();
    expect(client.stats()).toMatchObject({ sent: { records: 1000, turns: 5, dead_air: 1 }, dropped: 0, rejected: 0 });
    await client.close();
    const [s] = await rows(db(), sql`SELECT request_count, tenant_id, room_name FROM sessions WHERE id = 'c-batch'`);
    expect(s).toEqual({ request_count: 1000, tenant_id: "acme", room_name: "c-room" });
  });

  it("reads VOXGATE_COLLECTOR_URL and VOXGATE_API_KEY from the environment; options override them", async () => {
    const fromEnv = new VoxgateClient({ env: { VOXGATE_COLLECTOR_URL: base, VOXGATE_API_KEY: ACME }, flushIntervalMs: 60_000 });
    fromEnv.record(rec("c-env"));
    await fromEnv.close();
    expect(fromEnv.stats().sent.records).toBe(1);
    const overridden = new VoxgateClient({ env: { VOXGATE_COLLECTOR_URL: base, VOXGATE_API_KEY: "wrong" }, apiKey: ACME });
    overridden.record(rec("c-env"));
    await overridden.close();
    expect(overridden.stats()).toMatchObject({ sent: { records: 1 }, rejected: 0 });
    const [n] = await rows<{ n: number }>(db(), sql`SELECT count(*)::int AS n FROM requests WHERE session_id = 'c-env'`);
    expect(n?.n).toBe(2);
    // No collector URL: a single-node deployment; the client does nothing and never throws.
    const none = new VoxgateClient({ env: {} });
    expect(none.enabled).toBe(false);
    none.record(rec());
    await none.close();
  });

  it("posts a heartbeat that puts the agent on the roster", async () => {
    const client = new VoxgateClient({
      collectorUrl: base,
      apiKey: ACME,
      agentId: "client-agent",
      heartbeat: () => ({ status: "busy", active_sessions: 2, version: "9.9.9" }),
    });
    expect(await client.sendHeartbeat()).toBe(true);
    await client.close();
    const roster = (await (await t.call("GET", "/v1/agents", { key: ACME })).json()) as { agents: Record<string, unknown>[] };
    expect(roster.agents.find((a) => a.agent_id === "client-agent")).toMatchObject({ status: "busy", active_sessions: 2, version: "9.9.9" });
  });

  it("heartbeats by default as VOXGATE_AGENT_ID (or host:pid), and fills a record's id and timestamp", async () => {
    const client = new VoxgateClient({ env: { VOXGATE_COLLECTOR_URL: base, VOXGATE_API_KEY: ACME, VOXGATE_AGENT_ID: "env-agent" } });
    expect(client.agentId).toBe("env-agent");
    client.record({ modality: "tts", model_id: "elevenlabs/flash", characters: 42, session_id: "c-fill" });
    await client.close();
    const roster = (await (await t.call("GET", "/v1/agents", { key: ACME })).json()) as { agents: Record<string, unknown>[] };
    expect(roster.agents.some((a) => a.agent_id === "env-agent")).toBe(true);
    const [row] = await rows(db(), sql`SELECT characters::int AS characters FROM requests WHERE session_id = 'c-fill'`);
    expect(row).toEqual({ characters: 42 });
    const defaulted = new VoxgateClient({ collectorUrl: base, heartbeatIntervalMs: 0 });
    expect(defaulted.agentId).toMatch(/:\d+$/);
    await defaulted.close();
  });

  it("a refused batch (non-retryable 4xx) is counted as rejected, not retried forever", async () => {
    const client = new VoxgateClient({ collectorUrl: base, apiKey: "not-a-key", flushIntervalMs: 60_000 });
    client.record(rec());
    await client.flush();
    expect(client.stats()).toMatchObject({ rejected: 1, queued: { records: 0 } });
    await client.close();
  });
});

describe("voxgate/client resilience", () => {
  it("retries with backoff through 503s and delivers under the collector's path prefix with the key", async () => {
    const stub = await flakyCollector(3);
    const client = new VoxgateClient({
      collectorUrl: `${stub.url}/prefix/`,
      apiKey: "k-1",
      retryBaseMs: 5,
      flushIntervalMs: 60_000,
      heartbeatIntervalMs: 0,
    });
    client.record(rec());
    await client.flush();
    expect(client.stats()).toMatchObject({ sent: { records: 1 }, failedAttempts: 3 });
    expect(stub.seen).toEqual([{ path: "/prefix/v1/ingest", auth: "Bearer k-1", rows: 1 }]);
    await client.close();
    await stub.close();
  });

  it("keeps a batch it could not deliver and sends it on a later flush", async () => {
    const stub = await flakyCollector(2);
    const client = new VoxgateClient({ collectorUrl: stub.url, maxAttempts: 2, retryBaseMs: 1, flushIntervalMs: 60_000, heartbeatIntervalMs: 0 });
    client.record(rec());
    await client.flush();
    expect(client.stats().queued.records).toBe(1);
    await client.flush();
    expect(client.stats()).toMatchObject({ sent: { records: 1 }, queued: { records: 0 } });
    await client.close();
    await stub.close();
  });

  it("drops the oldest rows with a counter when the buffer is full; close() is bounded when the collector is gone", async () => {
    const client = new VoxgateClient({
      collectorUrl: "http://127.0.0.1:9",
      maxBuffer: 10,
      maxAttempts: 1,
      flushIntervalMs: 60_000,
      heartbeatIntervalMs: 0,
    });
    for (let i = 0; i < 15; i++) client.record(rec());
    expect(client.stats()).toMatchObject({ dropped: 5, queued: { records: 10 } });
    await client.close(200);
  });

  it("DropOldestQueue keeps the newest items in order and counts drops", () => {
    const q = new DropOldestQueue<number>(3);
    for (let i = 1; i <= 5; i++) q.push(i);
    expect(q.dropped).toBe(2);
    expect(q.take(2)).toEqual([3, 4]);
    q.unshift([3, 4]);
    q.push(6);
    expect(q.take(10)).toEqual([4, 5, 6]);
    expect(q.dropped).toBe(3);
  });
});
