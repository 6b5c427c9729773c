import { randomUUID } from "node:crypto";
import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { queryRows } from "../../src/db/client.js";
import type { RequestRow } from "../../src/db/schema/requests.js";
import { useTestApp } from "../support/app.js";
import { createTestDatabase, type TestDatabase } from "../support/db.js";
import { authYaml, KEYS } from "../support/fixtures.js";
import { seedRequests } from "../support/seed.js";

/**
 * DATABASE_READ_URL: the read routes query the read database (a replica), everything else the
 * primary. Here the "replica" is a second database with different rows, so an answer says which it read.
 */
const row = (provider: string, model: string): RequestRow => ({
  id: randomUUID(),
  ts: new Date(Date.now() - 60_000),
  modality: "llm",
  model_id: `${provider}/${model}`,
  provider,
  status: "success",
  pricing: "priced",
  cost_usd: "0.01",
});

describe("read routes on the read database", () => {
  let replica: TestDatabase | null = null;
  const t = useTestApp(async () => {
    replica = await createTestDatabase();
    return { yaml: authYaml("ops"), readDatabase: replica.database };
  });
  const onReplica = row("anthropic", "claude-haiku");
  const onPrimary = row("openai", "gpt-4.1-mini");

  beforeAll(async () => {
    if (!replica) throw new Error("no replica database");
    await seedRequests(replica.database.db, [onReplica]);
    await seedRequests(t.services.database.db, [onPrimary]);
  });
  afterAll(async () => {
    await replica?.drop();
  });

  const get = async (path: string) => {
    const res = await t.call("GET", path, { key: KEYS.ops });
    expect(res.status).toBe(200);
    return res.text();
  };

  it("/v1/costs and /v1/latency answer the replica's rows", async () => {
    const costs = JSON.parse(await get("/v1/costs?period=today"));
    expect(costs.requests).toBe(1);
    expect(Object.keys(costs.by_provider)).toEqual(["anthropic"]);
    const latency = JSON.parse(await get("/v1/latency?period=today"));
    expect(Object.keys(latency.models)).toEqual(["anthropic/claude-haiku"]);
  });

  it("/v1/logs and /v1/metrics answer the replica's rows", async () => {
    const logs = await get("/v1/logs");
    expect(logs).toContain(onReplica.id);
    expect(logs).not.toContain(onPrimary.id);
    const metrics = await get("/v1/metrics");
    expect(metrics).toContain('voxgate_requests_total{provider="anthropic"} 1');
    expect(metrics).not.toContain('voxgate_requests_total{provider="openai"} 1');
  });

  it("the primary keeps its own rows (writes never go to the replica)", async () => {
    const [primary] = await queryRows<{ n: number }>(t.services.database.db, sql`SELECT count(*)::int AS n FROM requests`);
    expect(primary?.n).toBe(1);
  });
});
