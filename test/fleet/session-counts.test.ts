import { randomUUID } from "node:crypto";
import { sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { queryRows } from "../../src/db/client.js";
import type { FleetIndex } from "../../src/fleet/index-queries.js";
import { DAY_MS } from "../../src/rollups/buckets.js";
import { useTestApp } from "../support/app.js";

// GET /api/agents counts sessions of a window's whole days from the span row's cached count
// (src/fleet/page-counts.ts), valid while the agent's sessions version is the one it was counted at.
// Each case changes what a cached span holds through ingest alone and expects the new count at once.

const OPS = "ops-key-0123456789abcdef";
const ACME = "acme-key-0123456789abcdef";
const YAML = `
auth:
  api_keys:
    - ${OPS}
    - { key: ${ACME}, scopes: [ingest, read], tenant_id: acme }
cost_tracking:
  backdate_horizon_days: 60
`;

const now = Date.now();
const daysAgo = (d: number, hourOfDay = 12) => new Date(Math.floor(now / DAY_MS) * DAY_MS - d * DAY_MS + hourOfDay * 3_600_000).toISOString();

describe("GET /api/agents: cached span session counts follow ingest", () => {
  const t = useTestApp({ yaml: YAML });
  const ingest = async (records: Record<string, unknown>[]) => {
    const res = await t.call("POST", "/v1/ingest", {
      key: ACME,
      body: records.map((r) => ({ id: randomUUID(), modality: "llm", model_id: "openai/gpt-4.1-mini", cost_usd: 0.01, ...r })),
    });
    expect(res.status, await res.clone().text()).toBeLessThan(300);
    expect(((await res.json()) as { skipped: number }).skipped).toBe(0);
  };
  const sessionsOf = async (agent: string, period: string) => {
    const res = await t.call("GET", `/api/agents?period=${period}&sort=agent_id&limit=1000`, { key: ACME });
    expect(res.status).toBe(200);
    return ((await res.json()) as FleetIndex).agents.find((a) => a.agent_id === agent)?.sessions;
  };
  const cached = (agent: string) =>
    queryRows<{ from_at: string; sessions: string | null }>(
      t.services.database.db,
      sql`SELECT from_at::text, sessions FROM fleet_index_agent_checkpoints WHERE agent_id = ${agent} AND tenant_id = 'acme'`,
    );

  it("a late session of an earlier day counts at once, and the count is cached", async () => {
    await ingest([
      { agent_id: "late", session_id: "l1", timestamp: daysAgo(3) },
      { agent_id: "late", session_id: "l2", timestamp: daysAgo(2) },
      { agent_id: "late", session_id: "l3", timestamp: new Date(now - 60_000).toISOString() },
    ]);
    expect(await sessionsOf("late", "all")).toBe(3);
    expect(await sessionsOf("late", "week")).toBe(3);
    // Written back for both spans the pages read (the unbounded one and the week's): a later page does
    // not count them again. A write that met the same page's sketch write on the row was skipped (SKIP
    // LOCKED) and is made by the next page, whose sketches are cached by then.
    expect(await sessionsOf("late", "all")).toBe(3);
    expect(await sessionsOf("late", "week")).toBe(3);
    const rows = await cached("late");
    expect(rows.filter((r) => r.sessions === "2").length).toBeGreaterThanOrEqual(2);
    expect(await sessionsOf("late", "all")).toBe(3);

    await ingest([{ agent_id: "late", session_id: "l4", timestamp: daysAgo(4) }]);
    expect(await sessionsOf("late", "all")).toBe(4);
    expect(await sessionsOf("late", "week")).toBe(4);
    // Today's sessions never invalidate the cache, and still count.
    await ingest([{ agent_id: "late", session_id: "l5", timestamp: new Date(now - 30_000).toISOString() }]);
    expect(await sessionsOf("late", "all")).toBe(5);
  });

  it("a session that gets its agent from a later record counts for that agent", async () => {
    await ingest([{ agent_id: "named", session_id: "n1", timestamp: daysAgo(5) }]);
    // n2 starts two days ago with no agent; its agent comes with today's record.
    await ingest([{ session_id: "n2", timestamp: daysAgo(2) }]);
    expect(await sessionsOf("named", "all")).toBe(1);
    await ingest([{ agent_id: "named", session_id: "n2", timestamp: new Date(now - 60_000).toISOString() }]);
    expect(await sessionsOf("named", "all")).toBe(2);
  });

  it("a session whose start a late record moves out of the window leaves it", async () => {
    await ingest([
      { agent_id: "moved", session_id: "m1", timestamp: daysAgo(3) },
      { agent_id: "moved", session_id: "m2", timestamp: daysAgo(4) },
    ]);
    expect(await sessionsOf("moved", "week")).toBe(2);
    // m1 started 20 days ago after all: out of the week, still in the month and in all.
    await ingest([{ agent_id: "moved", session_id: "m1", timestamp: daysAgo(20) }]);
    expect(await sessionsOf("moved", "week")).toBe(1);
    expect(await sessionsOf("moved", "month")).toBe(2);
    expect(await sessionsOf("moved", "all")).toBe(2);
  });

  it("a stale cached count (its version behind) is counted again, not shown", async () => {
    await ingest([
      { agent_id: "stale", session_id: "s1", timestamp: daysAgo(3) },
      { agent_id: "stale", session_id: "s2", timestamp: daysAgo(6) },
    ]);
    expect(await sessionsOf("stale", "all")).toBe(2);
    // A wrong count cached at an older version than the agent's: never shown.
    await t.services.database.db.execute(
      sql`UPDATE fleet_index_agent_checkpoints SET sessions = 99, sessions_version = -1 WHERE agent_id = 'stale' AND tenant_id = 'acme'`,
    );
    expect(await sessionsOf("stale", "all")).toBe(2);
    // …and the unbounded span's row, which that page read, holds the count again.
    expect((await cached("stale")).find((r) => r.from_at === "-infinity")?.sessions).toBe("2");
  });
});
