import { randomUUID } from "node:crypto";
import { describe, expect, it } from "vitest";
import { useTestApp } from "../support/app.js";
import { KEYS, OPS_YAML } from "../support/fixtures.js";
import { http, json } from "./http.js";

// Spend windows end at now; rows dated beyond the clock-skew allowance are refused.
const OPERATOR = KEYS.ops;
const yaml = `
${OPS_YAML}projects:
  support: { name: Support, daily_budget: 1, budget_action: block }
`;

const record = (aheadMs: number, cost = 5) => ({
  id: randomUUID(),
  timestamp: new Date(Date.now() + aheadMs).toISOString(),
  modality: "llm",
  model_id: "openai/gpt-4.1-mini",
  project: "support",
  input_tokens: 100,
  output_tokens: 10,
  cost_usd: cost,
});

interface IngestAnswer {
  accepted: number;
  skipped: number;
  skipped_records: { index: number; reason: string }[];
}

describe("future-dated rows", () => {
  const t = useTestApp({ yaml });

  it("refuses records, turns and dead air dated beyond the skew allowance, with a reason", async () => {
    const answer = await json<IngestAnswer>(http(t, "POST", "/v1/ingest", { key: OPERATOR, body: [record(3600_000), record(23 * 3600_000)] }), 200);
    expect(answer).toMatchObject({ accepted: 0, skipped: 2 });
    expect(answer.skipped_records[0]?.reason).toMatch(/timestamp: .*minutes ahead of the collector's clock/);
    const ahead = Date.now() + 3600_000;
    const turns = await json<{ accepted: number; skipped_rows: { reason: string }[] }>(
      http(t, "POST", "/v1/ingest/turns", { key: OPERATOR, body: [{ session_id: "s-f", turn_index: 0, caller_speak_start_ms: ahead, caller_speak_end_ms: ahead + 1000 }] }),
      200,
    );
    expect(turns.accepted).toBe(0);
    expect(turns.skipped_rows[0]?.reason).toContain("ahead of the collector's clock");
    const dead = await json<{ accepted: number }>(
      http(t, "POST", "/v1/ingest/dead-air", { key: OPERATOR, body: [{ session_id: "s-f", started_at_ms: ahead, duration_ms: 4000, threshold_used_ms: 3000 }] }),
      200,
    );
    expect(dead.accepted).toBe(0);
  });

  it("a row within the allowance counts in no spend window until its time: project budget and costs agree", async () => {
    const answer = await json<IngestAnswer>(http(t, "POST", "/v1/ingest", { key: OPERATOR, body: [record(3 * 60_000)] }), 200);
    expect(answer.accepted).toBe(1);
    const project = await json<{ today_spend: number; budget_status: string }>(http(t, "GET", "/v1/projects/support", { key: OPERATOR }), 200);
    const costs = await json<{ total: number }>(http(t, "GET", "/v1/costs?period=today&project=support", { key: OPERATOR }), 200);
    const all = await json<{ total: number }>(http(t, "GET", "/v1/costs?period=all", { key: OPERATOR }), 200);
    expect(costs.total).toBe(0);
    expect(all.total).toBe(0);
    expect(project.today_spend).toBe(costs.total);
    expect(project.budget_status).toBe("ok");
    const list = await json<{ stats: Record<string, { cost_today: number }> }>(http(t, "GET", "/v1/projects", { key: OPERATOR }), 200);
    expect(list.stats.support?.cost_today).toBe(0);
  });
});
