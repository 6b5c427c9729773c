import { sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { ROSTER_AGEING_SECONDS } from "../../src/fleet/presence.js";
import { useTestApp } from "../support/app.js";
import { ACME, AUTH_YAML, GLOBEX, OPS, READER, rows } from "../ingest/helpers.js";

interface Roster {
  agents: Record<string, unknown>[];
  count: number;
  ageing_seconds: number;
}

const snapshot = (agentId: string, extra: Record<string, unknown> = {}) => ({
  agent_id: agentId,
  agent_name: "support-bot",
  dispatch_name: "inbound",
  status: "idle",
  active_sessions: 0,
  version: "1.4.2",
  project: "support",
  region: "eu-west",
  host: "worker-7",
  started_at: "2026-11-21T10:00:00Z",
  memory_rss_bytes: 250_000_000,
  memory_total_bytes: 8_000_000_000,
  cpu_pct: 12.5,
  ts: Date.now(),
  ...extra,
});

describe("fleet presence", () => {
  const t = useTestApp({ yaml: AUTH_YAML });
  const db = () => t.services.database.db;
  const beat = (body: unknown, key = ACME) => t.call("POST", "/v1/agents/heartbeat", { key, body });
  const roster = async (key: string) => (await (await t.call("GET", "/v1/agents", { key })).json()) as Roster;

  it("accepts a heartbeat with 202 {status: accepted} and lists the worker on the roster", async () => {
    const res = await beat(snapshot("agent-1"));
    expect(res.status).toBe(202);
    expect(await res.json()).toEqual({ status: "accepted" });
    const r = await roster(ACME);
    expect(r.ageing_seconds).toBe(ROSTER_AGEING_SECONDS);
    expect(r.agents).toHaveLength(1);
    expect(r.agents[0]).toMatchObject({
      agent_id: "agent-1",
      status: "idle",
      version: "1.4.2",
      host: "worker-7",
      memory_rss_bytes: 250_000_000,
      tenant_id: "acme",
      started_at: "2026-11-21T10:00:00.000Z",
    });
    expect(JSON.stringify(r.agents[0])).not.toMatch(/cost|latency/);
  });

  it("upserts by tenant + agent_id: the latest snapshot wins, one row per agent", async () => {
    await beat(snapshot("agent-2", { status: "idle" }));
    await beat(snapshot("agent-2", { status: "busy", active_sessions: 3 }));
    const r = await roster(ACME);
    const a2 = r.agents.filter((a) => a.agent_id === "agent-2");
    expect(a2).toHaveLength(1);
    expect(a2[0]).toMatchObject({ status: "busy", active_sessions: 3 });
  });

  it("ages a worker out 45 s after its last heartbeat, on the collector's clock", async () => {
    await beat(snapshot("agent-old", { ts: Date.now() + 3600_000 }));
    await db().execute(
      sql`UPDATE agent_presence SET last_seen_at = now() - make_interval(secs => ${ROSTER_AGEING_SECONDS - 2}) WHERE agent_id = 'agent-old'`,
    );
    expect((await roster(ACME)).agents.some((a) => a.agent_id === "agent-old")).toBe(true);
    await db().execute(
      sql`UPDATE agent_presence SET last_seen_at = now() - make_interval(secs => ${ROSTER_AGEING_SECONDS + 1}) WHERE agent_id = 'agent-old'`,
    );
    expect((await roster(ACME)).agents.some((a) => a.agent_id === "agent-old")).toBe(false);
    // A new heartbeat puts it back on the roster.
    await beat(snapshot("agent-old"));
    expect((await roster(ACME)).agents.some((a) => a.agent_id === "agent-old")).toBe(true);
  });

  it("scopes the roster by credential; a body tenant_id and a tenant query parameter change nothing", async () => {
    expect((await beat(snapshot("agent-g", { tenant_id: "acme" }), GLOBEX)).status).toBe(202);
    const [row] = await rows(db(), sql`SELECT tenant_id FROM agent_presence WHERE agent_id = 'agent-g'`);
    expect(row).toEqual({ tenant_id: "globex" });
    const acme = await (await t.call("GET", "/v1/agents?tenant=globex", { key: ACME })).json() as Roster;
    expect(acme.agents.every((a) => a.tenant_id === "acme")).toBe(true);
    expect((await roster(GLOBEX)).agents.map((a) => a.agent_id)).toEqual(["agent-g"]);
    const all = await roster(OPS);
    expect(new Set(all.agents.map((a) => a.tenant_id))).toEqual(new Set(["acme", "globex"]));
  });

  it("the same agent_id under two tenants is two presence rows; neither overwrites the other", async () => {
    await beat(snapshot("shared-id", { host: "acme-host" }), ACME);
    await beat(snapshot("shared-id", { host: "globex-host" }), GLOBEX);
    const got = await rows(db(), sql`SELECT tenant_id, host FROM agent_presence WHERE agent_id = 'shared-id' ORDER BY tenant_id`);
    expect(got).toEqual([
      { tenant_id: "acme", host: "acme-host" },
      { tenant_id: "globex", host: "globex-host" },
    ]);
  });

  it("auth: heartbeat needs write/ingest (401 without key, 403 read key); roster needs read", async () => {
    expect((await t.call("POST", "/v1/agents/heartbeat", { body: snapshot("x") })).status).toBe(401);
    expect((await beat(snapshot("x"), READER)).status).toBe(403);
    expect((await t.call("GET", "/v1/agents")).status).toBe(401);
    expect((await t.call("GET", "/v1/agents", { key: READER })).status).toBe(200);
  });

  it("validates the snapshot: 422 with field paths, nothing written", async () => {
    const bad: [string, unknown][] = [
      ["agent_id", { ...snapshot("v"), agent_id: undefined }],
      ["status", snapshot("v", { status: "sleeping" })],
      ["active_sessions", snapshot("v", { active_sessions: -1 })],
      ["cpu_pct", snapshot("v", { cpu_pct: "NaN" })],
      ["memory_rss_bytes", snapshot("v", { memory_rss_bytes: 1.5 })],
      ["host", snapshot("v", { host: "h".repeat(10_000) })],
      ["ts", snapshot("v", { ts: "yesterday-ish" })],
      ["started_at", snapshot("v", { started_at: 1e20 })],
    ];
    for (const [path, body] of bad) {
      const res = await beat(body);
      expect(res.status, path).toBe(422);
      const err = (await res.json()) as { error: { details: { path: string }[] } };
      expect(err.error.details[0]?.path).toBe(path);
    }
    for (const body of [[snapshot("v")], "str", null, 5]) expect((await beat(body)).status).toBe(422);
    const [n] = await rows<{ n: number }>(db(), sql`SELECT count(*)::int AS n FROM agent_presence WHERE agent_id = 'v'`);
    expect(n?.n).toBe(0);
  });
});
