import { beforeAll, describe, expect, it } from "vitest";
import { diagGates, diagRuns } from "../../src/db/schema/index.js";
import { escapeLabelValue, renderExposition } from "../../src/metrics/exposition.js";
import { DAY, HOUR, insertRequests, KEYS, MIN, REPORTS_YAML, row } from "../reports/fixtures.js";
import { createTestApp, useTestApp } from "../support/app.js";
import { obtainPromtool, promtoolCheck } from "./promtool.js";

const WEIRD_PROJECT = 'we"ird\\name\nline';

/**
 * Docs/api/reports.md fixes `voxgate_cost_usd_total` and `voxgate_requests_total` as gauges (names kept for
 * compatibility), which promtool's linter reports (exit 3). Those two findings, and nothing else, are
 * allowed; a parse error (exit 1) or any other finding fails.
 */
const MANDATED_LINTS = new Set([
  'voxgate_cost_usd_total non-counter metrics should not have "_total" suffix',
  'voxgate_requests_total non-counter metrics should not have "_total" suffix',
]);
function expectOnlyMandatedLints(r: { status: number | null; output: string }) {
  const findings = r.output.split("\n").filter((l) => l.trim() !== "");
  expect(findings.filter((l) => !MANDATED_LINTS.has(l.trim()))).toEqual([]);
  expect(r.status).toBe(findings.length === 0 ? 0 : 3);
}

/** Sample lines as "name{labels}" → value. */
function samples(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split("\n")) {
    if (line === "" || line.startsWith("#")) continue;
    const cut = line.lastIndexOf(" ");
    out.set(line.slice(0, cut), Number(line.slice(cut + 1)));
  }
  return out;
}

describe("GET /v1/metrics", () => {
  const scrape = async (key = KEYS.ops) => {
    const res = await t.call("GET", "/v1/metrics", { key });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^text\/plain; version=0\.0\.4/);
    return res.text();
  };

  const t = useTestApp({ yaml: REPORTS_YAML });
  beforeAll(async () => {
    await insertRequests(t.services.database.db, [
      row({ tenant_id: "acme", agoMs: 5 * MIN, project: "support", cost_usd: "0.5", ttfb_ms: 200, total_latency_ms: 1000 }),
      row({ tenant_id: "acme", agoMs: 3 * HOUR, project: WEIRD_PROJECT, model_id: "deepgram/nova-3", modality: "stt", cost_usd: "0.25", ttfb_ms: 400, total_latency_ms: 3000 }),
      row({ tenant_id: "globex", agoMs: 20 * HOUR, project: "support", cost_usd: "0.1", ttfb_ms: 99_000, total_latency_ms: 99_000, is_probe: true }),
      row({ tenant_id: "acme", agoMs: 2 * DAY, project: "support", cost_usd: "9", ttfb_ms: 5, total_latency_ms: 5 }),
    ]);
  });

  it("publishes the documented series over the rolling 24 h", async () => {
    const text = await scrape();
    const s = samples(text);
    expect(s.get('voxgate_cost_usd_total{period="today"}')).toBe(0.85);
    expect(s.get('voxgate_cost_usd_total{provider="openai"}')).toBe(0.6);
    expect(s.get('voxgate_cost_usd_total{provider="deepgram"}')).toBe(0.25);
    expect(s.get('voxgate_cost_usd_total{project="support"}')).toBe(0.6);
    expect(s.get(`voxgate_cost_usd_total{project="${escapeLabelValue(WEIRD_PROJECT)}"}`)).toBe(0.25);
    expect(s.get('voxgate_requests_total{provider="openai"}')).toBe(2);
    expect(s.get('voxgate_requests_total{provider="deepgram"}')).toBe(1);
    expect(s.has("voxgate_requests_total")).toBe(false);
    expect(s.get("voxgate_providers_configured")).toBe(2);
    expect(s.get("voxgate_uptime_seconds")).toBeGreaterThanOrEqual(0);
    // Summaries: quantiles in seconds, probe traffic excluded, no _sum/_count children.
    expect(s.get('voxgate_request_total_latency_seconds{quantile="0.99"}')).toBeCloseTo(3, 1);
    expect(s.get('voxgate_request_ttfb_seconds{quantile="0.5"}')).toBeCloseTo(0.2, 2);
    expect(text).not.toMatch(/_sum|_count/);
    expect(text).toContain("# TYPE voxgate_request_ttfb_seconds summary\n");
    expect(text).toContain("# TYPE voxgate_cost_usd_total gauge\n");
    expect(text).toContain("# TYPE voxgate_requests_total gauge\n");
    // No diagnostics run: the diagnostics series are absent, not zero.
    expect(text).not.toContain("voxgate_diag_");
  });

  it("scopes to the key's tenant and needs read scope", async () => {
    const s = samples(await scrape(KEYS.globex));
    expect(s.get('voxgate_cost_usd_total{period="today"}')).toBe(0.1);
    expect(s.has('voxgate_cost_usd_total{project="support"}')).toBe(true);
    expect(s.has(`voxgate_cost_usd_total{project="${escapeLabelValue(WEIRD_PROJECT)}"}`)).toBe(false);
    expect(s.has('voxgate_request_ttfb_seconds{quantile="0.5"}')).toBe(false);
    expect((await t.call("GET", "/v1/metrics")).status).toBe(401);
    expect((await t.call("GET", "/v1/metrics", { key: KEYS.ingestOnly })).status).toBe(403);
  });

  it("diagnostics series come from the newest run that gated anything", async () => {
    const db = t.services.database.db;
    const finished = new Date("2026-01-02T03:04:05Z");
    const [run] = await db.insert(diagRuns).values({ verdict: "FAIL", agentId: "agent-1", finishedAt: finished }).returning();
    if (!run) throw new Error("no run");
    await db.insert(diagGates).values([
      { runId: run.id, gateId: "stt_latency", status: "PASS" },
      { runId: run.id, gateId: "stt_latency", status: "PASS" },
      { runId: run.id, gateId: "llm_ttfb", status: "FAIL" },
      { runId: run.id, gateId: "tts", status: "MAYBE" },
    ]);
    // A newer run without gates does not replace it.
    await db.insert(diagRuns).values({ verdict: "PASS", finishedAt: new Date("2026-02-01T00:00:00Z") });
    const text = await scrape();
    const s = samples(text);
    expect(s.get('voxgate_diag_gate_status{gate="stt_latency",status="PASS"}')).toBe(2);
    expect(s.get('voxgate_diag_gate_status{gate="llm_ttfb",status="FAIL"}')).toBe(1);
    expect(text).not.toContain('gate="tts"');
    expect(text).not.toContain("agent-1");
    expect(s.get('voxgate_diag_run_verdict{verdict="FAIL"}')).toBe(1);
    expect(s.get("voxgate_diag_run_timestamp_seconds")).toBe(finished.getTime() / 1000);

    // A newer gated run with an unrecognised verdict: its verdict series is absent, never zero.
    const [odd] = await db.insert(diagRuns).values({ verdict: "SORT-OF", finishedAt: new Date("2026-03-01T00:00:00Z") }).returning();
    if (!odd) throw new Error("no run");
    await db.insert(diagGates).values({ runId: odd.id, gateId: "llm_ttfb", status: "WARN" });
    const s2 = samples(await scrape());
    expect([...s2.keys()].filter((k) => k.startsWith("voxgate_diag_run_verdict"))).toEqual([]);
    expect(s2.get('voxgate_diag_gate_status{gate="llm_ttfb",status="WARN"}')).toBe(1);
    expect(s2.has('voxgate_diag_gate_status{gate="llm_ttfb",status="FAIL"}')).toBe(false);
  });

  it("passes promtool check metrics", async () => {
    const promtool = obtainPromtool();
    if ("reason" in promtool) {
      // In CI a missing promtool is a failure, never a silent skip.
      if (process.env.CI) throw new Error(`promtool is required in CI: ${promtool.reason}`);
      console.warn(`SKIPPING promtool check: ${promtool.reason}`);
      return;
    }
    const text = await scrape();
    expect(text).toContain("voxgate_diag_gate_status");
    expectOnlyMandatedLints(promtoolCheck(promtool.path, text));
    // An empty database (no traffic, no diagnostics) is valid exposition too.
    const empty = await createTestApp();
    try {
      const res = await empty.call("GET", "/v1/metrics");
      expectOnlyMandatedLints(promtoolCheck(promtool.path, await res.text()));
    } finally {
      await empty.close();
    }
  }, 300_000);
});

describe("exposition writer", () => {
  it("escapes label values and help text, drops families without samples", () => {
    const text = renderExposition([
      { name: "x_one", help: "a \\ b\nc", type: "gauge", samples: [{ labels: { l: 'a"b\\c\nd' }, value: 1.5 }] },
      { name: "x_none", help: "never", type: "gauge", samples: [] },
      { name: "x_nan", help: "odd values", type: "gauge", samples: [{ value: Number.NaN }, { labels: { k: "inf" }, value: Number.POSITIVE_INFINITY }] },
    ]);
    expect(text).toBe(
      '# HELP x_one a \\\\ b\\nc\n# TYPE x_one gauge\nx_one{l="a\\"b\\\\c\\nd"} 1.5\n# HELP x_nan odd values\n# TYPE x_nan gauge\nx_nan NaN\nx_nan{k="inf"} +Inf\n',
    );
  });
});
