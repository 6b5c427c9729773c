import { randomUUID } from "node:crypto";
import { sql } from "drizzle-orm";
import { beforeAll, describe, expect, it } from "vitest";
import type { FleetIndex } from "../../src/fleet/index-queries.js";
import { useTestApp } from "../support/app.js";
import { captureLogger } from "../support/log.js";
import { rows } from "../ingest/helpers.js";

const OPS = "ops-key-0123456789abcdef";
const ACME = "acme-key-0123456789abcdef";
const GLOBEX = "globex-key-0123456789abcdef";
const ACME_INGEST = "acme-ingest-only-0123456789";

const YAML = `
auth:
  api_keys:
    - ${OPS}
    - { key: ${ACME}, scopes: [ingest, read], tenant_id: acme }
    - { key: ${GLOBEX}, scopes: [ingest, read], tenant_id: globex }
    - { key: ${ACME_INGEST}, scopes: [ingest], tenant_id: acme }
rate_card:
  default_markup: 1.5
`;

const MIN = 60_000;
const HOUR = 60 * MIN;

describe("GET /api/agents: the fleet index", () => {
  const now = Date.now();
  const rec = (o: Record<string, unknown>) => ({
    id: randomUUID(),
    timestamp: new Date(now - 3 * HOUR).toISOString(),
    modality: "llm",
    model_id: "openai/gpt-4.1-mini",
    agent_id: "agent-a",
    ...o,
  });
  const post = async (path: string, key: string, body: unknown) => {
    const res = await t.call("POST", path, { key, body });
    expect(res.status, `${path} ${await res.clone().text()} ${String((globalThis as Record<string, unknown>).capLines)}`).toBeLessThan(300);
  };
  const index = async (key: string, query = "") => {
    const res = await t.call("GET", `/api/agents${query}`, { key });
    expect(res.status, `${await res.clone().text()} ${String((globalThis as Record<string, unknown>).capLines)}`).toBe(200);
    return (await res.json()) as FleetIndex;
  };

  const cap = captureLogger("error");
  const t = useTestApp({ yaml: YAML, log: cap.log });
  beforeAll(async () => {
    (globalThis as Record<string, unknown>).capLines = cap.lines;
    // Turns of sess-a2 arrive before any record names its agent: they count once a record does.
    await post("/v1/ingest/turns", ACME, [
      { session_id: "sess-a2", turn_index: 0, caller_speak_start_ms: now - 2 * HOUR, caller_speak_end_ms: now - 2 * HOUR + 900, response_speed_ms: 1100 },
    ]);
    await post("/v1/ingest", ACME, [
      rec({ ttfb_ms: 100, cost_usd: 0.01, session_id: "sess-a1" }),
      rec({ ttfb_ms: 200, cost_usd: 0.01, session_id: "sess-a1", timestamp: new Date(now - MIN).toISOString() }),
      rec({ ttfb_ms: 300, cost_usd: 0.01, session_id: "sess-a1" }),
      rec({ modality: "stt", model_id: "deepgram/nova-3", ttfb_ms: 50, cost_usd: 0.02, session_id: "sess-a1" }),
      rec({ modality: "tts", model_id: "cartesia/sonic", ttfb_ms: 80, cost_usd: 0.03, status: "error", session_id: "sess-a1" }),
      // Probe traffic: counted apart, never in a percentile, errors or error_rate.
      rec({ ttfb_ms: 5000, cost_usd: 0.1, is_probe: true, status: "error", session_id: "sess-a1" }),
    ]);
    await post("/v1/ingest/turns", ACME, [
      { session_id: "sess-a1", turn_index: 0, caller_speak_start_ms: now - 3 * HOUR, caller_speak_end_ms: now - 3 * HOUR + 500, response_speed_ms: 700 },
      { session_id: "sess-a1", turn_index: 1, caller_speak_start_ms: now - 3 * HOUR + MIN, caller_speak_end_ms: now - 3 * HOUR + MIN + 500, response_speed_ms: 900 },
    ]);
    await post("/v1/ingest", ACME, [rec({ ttfb_ms: 400, cost_usd: 0.01, session_id: "sess-a2", timestamp: new Date(now - 2 * HOUR).toISOString() })]);
    await post("/v1/agents/heartbeat", ACME, { agent_id: "agent-a", host: "worker-7", version: "1.4.2", agent_name: "support-bot" });
    await post("/v1/agents/heartbeat", ACME, { agent_id: "agent-idle", host: "worker-9", version: "1.5.0" });
    // Another tenant with an agent of the same id: never in acme's index.
    await post("/v1/ingest", GLOBEX, [rec({ ttfb_ms: 999, cost_usd: 1 }), rec({ agent_id: "agent-g", ttfb_ms: 250, cost_usd: 0.05 })]);
  });

  const agentA = {
    agent_id: "agent-a",
    tenant_id: "acme",
    agent_name: "support-bot",
    host: "worker-7",
    version: "1.4.2",
    online: true,
    sessions: 2,
    calls: 0,
    requests: 7,
    errors: 1,
    error_rate: 0.1667,
    cost_usd: 0.19,
    // What rating stamped on the rows (the catalog prices tokens/audio; cost_usd given without units is not marked up).
    rated_price_usd: 0.045,
    turns: 3,
    p95_response_speed_ms: 1100,
    p95_ttfb_ms: { stt: 50, llm: 400, tts: 80 },
    probe: { requests: 1, turns: 0, calls: 0 },
  };

  it("answers one entry per agent with exact figures from the write path (rollups + edge rows)", async () => {
    for (const period of ["", "?period=today", "?period=week", "?period=month", "?period=all"]) {
      const r = await index(ACME, period);
      expect(r).toMatchObject({ total_agents: 2, online: 2, sort: "cost", offset: 0, limit: 100 });
      expect(r.agents.map((a) => a.agent_id)).toEqual(["agent-a", "agent-idle"]);
      expect(r.agents[0]).toEqual({ ...agentA, region: null, last_heartbeat_at: expect.any(String) });
      expect(r.agents[1]).toMatchObject({
        agent_id: "agent-idle",
        host: "worker-9",
        version: "1.5.0",
        online: true,
        requests: 0,
        cost_usd: 0,
        error_rate: null,
        p95_ttfb_ms: { stt: null, llm: null, tts: null },
        p95_response_speed_ms: null,
      });
    }
  });

  it("matches the raw request rows' sums", async () => {
    const [raw] = await rows<{ cost: string; rated: string; n: string }>(
      t.services.database.db,
      sql`SELECT sum(cost_usd)::float8::text AS cost, sum(rated_price_usd)::float8::text AS rated, count(*)::text AS n
            FROM requests WHERE tenant_id = 'acme' AND agent_id = 'agent-a'`,
    );
    expect(raw).toEqual({ cost: String(agentA.cost_usd), rated: String(agentA.rated_price_usd), n: String(agentA.requests) });
  });

  it("keeps probe traffic out of every percentile and counts it per agent", async () => {
    const r = await index(ACME);
    const a = r.agents.find((x) => x.agent_id === "agent-a");
    expect(a?.probe.requests).toBe(1);
    // The 5000 ms probe TTFB is nowhere; with it llm p95 would be 5000.
    expect(a?.p95_ttfb_ms.llm).toBe(400);
    expect(a?.errors).toBe(1);
  });

  it("confines a tenant key to its own agents; the operator sees every tenant", async () => {
    const g = await index(GLOBEX);
    expect(g.agents.map((a) => [a.tenant_id, a.agent_id, a.cost_usd])).toEqual([
      ["globex", "agent-a", 1],
      ["globex", "agent-g", 0.05],
    ]);
    expect(g.agents[0]?.p95_ttfb_ms.llm).toBe(999);
    const ops = await index(OPS);
    expect(ops.total_agents).toBe(4);
    expect(ops.agents.map((a) => [a.tenant_id, a.agent_id])).toEqual([
      ["globex", "agent-a"],
      ["acme", "agent-a"],
      ["globex", "agent-g"],
      ["acme", "agent-idle"],
    ]);
    expect(ops.agents[1]).toMatchObject(agentA);
  });

  it("pages and sorts", async () => {
    const p = await index(OPS, "?limit=1&offset=1&sort=agent_id");
    expect(p.total_agents).toBe(4);
    expect(p.agents.map((a) => [a.tenant_id, a.agent_id])).toEqual([["globex", "agent-a"]]);
    const past = await index(OPS, "?offset=10");
    expect(past).toMatchObject({ total_agents: 4, agents: [] });
  });

  it("refuses an ingest-only key with 403 and no key with 401", async () => {
    expect((await t.call("GET", "/api/agents", { key: ACME_INGEST })).status).toBe(403);
    expect((await t.call("GET", "/api/agents")).status).toBe(401);
  });

  it("answers a bad period exactly as /api/costs does", async () => {
    const a = await t.call("GET", "/api/agents?period=year", { key: ACME });
    const c = await t.call("GET", "/api/costs?period=year", { key: ACME });
    expect(a.status).toBe(422);
    expect(a.status).toBe(c.status);
    expect(await a.json()).toEqual(await c.json());
  });

  it("answers NUL in the query with a 4xx, never a 5xx", async () => {
    for (const q of ["period=%00", "sort=%00", "limit=%00", "offset=1%00", "period=today%00"]) {
      const res = await t.call("GET", `/api/agents?${q}`, { key: OPS });
      expect(res.status, q).toBeGreaterThanOrEqual(400);
      expect(res.status, q).toBeLessThan(500);
    }
    for (const q of ["limit=0", "limit=1001", "sort=latency"]) expect((await t.call("GET", `/api/agents?${q}`, { key: OPS })).status, q).toBe(422);
  });

  it("ranks equal costs as ties (by agent_id) however they were summed: 0.1 + 0.2 on two days equals 0.3", async () => {
    const DAY = 24 * HOUR;
    await post("/v1/ingest", GLOBEX, [
      // One row today, one three days ago: two terms of the ranking (today's day rows, the running totals).
      rec({ agent_id: "tie-1", cost_usd: 0.3, timestamp: new Date(now - MIN).toISOString() }),
      rec({ agent_id: "tie-2", cost_usd: 0.1, timestamp: new Date(now - 3 * DAY).toISOString() }),
      rec({ agent_id: "tie-2", cost_usd: 0.2, timestamp: new Date(now - MIN).toISOString() }),
    ]);
    const page = await index(GLOBEX, "?period=week");
    const ties = page.agents.filter((a) => a.agent_id.startsWith("tie-"));
    expect(ties.map((a) => [a.agent_id, a.cost_usd])).toEqual([
      ["tie-1", 0.3],
      ["tie-2", 0.3],
    ]);
    const costs = page.agents.map((a) => a.cost_usd);
    expect(costs).toEqual([...costs].sort((x, y) => y - x));
  });

  it("ranks costs past the ranking's integer fast path (≥ $900M per rollup row) without an error, in order", async () => {
    // A record costs at most $1e9; an agent's rollup rows sum past the bigint range of 1e-10 units ($922M).
    await post("/v1/ingest", GLOBEX, [
      rec({ agent_id: "big-1", cost_usd: 950_000_000, timestamp: new Date(now - MIN).toISOString() }),
      rec({ agent_id: "big-2", cost_usd: 1_000_000_000, timestamp: new Date(now - MIN).toISOString() }),
      rec({ agent_id: "big-2", cost_usd: 1_000_000_000, timestamp: new Date(now - 2 * MIN).toISOString() }),
      rec({ agent_id: "big-3", cost_usd: 899_999_999.5, timestamp: new Date(now - MIN).toISOString() }),
    ]);
    const res = await t.call("GET", "/api/agents?period=today", { key: GLOBEX });
    expect(res.status).toBe(200);
    const page = (await res.json()) as { agents: { agent_id: string; cost_usd: number }[] };
    expect(page.agents.slice(0, 3).map((a) => [a.agent_id, a.cost_usd])).toEqual([
      ["big-2", 2_000_000_000],
      ["big-1", 950_000_000],
      ["big-3", 899_999_999.5],
    ]);
  });

  it("counts each (tenant, agent)'s own sessions and calls, probe calls apart", async () => {
    const db = t.services.database.db;
    const at = now - HOUR;
    await db.execute(sql`INSERT INTO calls (room_sid, room_name, tenant_id, agent_id, is_probe, started_at_ms) VALUES
      ('RM_cnt_1', 'cnt-room-1', 'acme', 'agent-a', false, ${at}::bigint),
      ('RM_cnt_2', 'cnt-room-2', 'acme', 'agent-a', true, ${at}::bigint),
      ('RM_cnt_3', 'cnt-room-3', 'globex', 'agent-a', false, ${at}::bigint),
      ('RM_cnt_4', 'cnt-room-4', 'acme', 'agent-a', false, ${now - 3 * 24 * HOUR}::bigint)`);
    await db.execute(sql`INSERT INTO sessions (id, tenant_id, agent_id, started_at, ended_at)
      VALUES ('sess-g-cnt', 'globex', 'agent-a', ${new Date(at).toISOString()}::timestamptz, ${new Date(at).toISOString()}::timestamptz)`);
    const ops = await index(OPS, "?sort=agent_id&limit=1000");
    const pick = (tenant: string) => ops.agents.find((a) => a.tenant_id === tenant && a.agent_id === "agent-a");
    expect(pick("acme")).toMatchObject({ sessions: 2, calls: 1, probe: { calls: 1 } });
    expect(pick("globex")).toMatchObject({ sessions: 1, calls: 1, probe: { calls: 0 } });
    // The week reaches the call of three days ago; a tenant key sees its own counts only.
    const week = await index(ACME, "?period=week");
    expect(week.agents.find((a) => a.agent_id === "agent-a")).toMatchObject({ sessions: 2, calls: 2, probe: { calls: 1 } });
  });
});
