import { spawnSync } from "node:child_process";
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse as parseYaml } from "yaml";
import { diagGates, diagRuns } from "../../src/db/schema/index.js";
import { gatewayApp, KEYS_YAML, OPERATOR_KEY, PROVIDER_KEY, READ_KEY } from "../gateway/support.js";
import { type OpenSocket, openWs, opened, waitFor } from "../gateway/ws-support.js";
import { HOUR, insertRequests, MIN, row } from "../reports/fixtures.js";
import { pseudoAudio } from "../support/stubs/audio.js";
import { DeepgramStub } from "../support/stubs/deepgram.js";

/**
 * The operations kit in deploy/: the Prometheus rules pass promtool (syntax and their own unit
 * tests), and every metric the rules and the Grafana board query is one a started Voxgate really
 * publishes on GET /v1/metrics, with the label values the selectors match on.
 */
const ROOT = join(import.meta.dirname, "..", "..");
const RULES = join(ROOT, "deploy/prometheus/voxgate-rules.yml");
const RULE_TESTS = join(ROOT, "deploy/prometheus/voxgate-rules.test.yml");
const BOARD = join(ROOT, "deploy/grafana/voxgate.json");

/** promtool on PATH (CI installs Debian's `prometheus` package), else null. */
const PROMTOOL = ["promtool", "/usr/bin/promtool"].find((p) => spawnSync(p, ["--version"], { stdio: "ignore" }).status === 0) ?? null;
const NO_PROMTOOL = "promtool not installed (apt-get install prometheus): promtool checks skipped";
if (!PROMTOOL) console.warn(NO_PROMTOOL);

interface RuleFile {
  groups: { name: string; rules: { record?: string; alert?: string; expr: string }[] }[];
}
const rules = parseYaml(readFileSync(RULES, "utf8")) as RuleFile;
const ruleExprs = rules.groups.flatMap((g) => g.rules.map((r) => r.expr));

interface Panel {
  type: string;
  title: string;
  gridPos: { h: number; w: number; x: number; y: number };
  targets?: { refId: string; expr: string }[];
}
const board = JSON.parse(readFileSync(BOARD, "utf8")) as {
  title: string;
  uid: string;
  schemaVersion: number;
  panels: Panel[];
  templating: { list: { name: string; type: string; query: unknown }[] };
};
const boardExprs = board.panels.flatMap((p) => (p.targets ?? []).map((t) => t.expr));

/**
 * Counters published only once their event happened (no zero series: their labels name the event's
 * route and providers): the traffic below has no live stream failover, so the published check
 * cannot see this one (test/gateway/failover/ covers it).
 */
const AFTER_EVENTS = new Set(["voxgate_gateway_stream_failovers_total"]);

/** Voxgate metric names in a PromQL expression (recorded `voxgate:` series are the rules' own). */
const metricNames = (expr: string) => [...new Set(expr.match(/\bvoxgate_[a-zA-Z0-9_]+/g) ?? [])];

/** `name{label="value"}` equality matchers, Prometheus' own target labels (job, instance) left out. */
function equalityMatchers(expr: string): { name: string; label: string; value: string }[] {
  const out: { name: string; label: string; value: string }[] = [];
  for (const [, name, body] of expr.matchAll(/\b(voxgate_[a-zA-Z0-9_]+)\{([^}]*)\}/g)) {
    for (const [, label, value] of (body ?? "").matchAll(/([a-zA-Z_]+)\s*=\s*"([^"]*)"/g)) {
      if (label !== "job" && label !== "instance" && name && label && value !== undefined) out.push({ name, label, value });
    }
  }
  return out;
}

function promtool(args: string[]) {
  if (!PROMTOOL) throw new Error(NO_PROMTOOL);
  const r = spawnSync(PROMTOOL, args, { encoding: "utf8", timeout: 60_000 });
  return { status: r.status, output: `${r.stdout ?? ""}${r.stderr ?? ""}` };
}

describe.skipIf(!PROMTOOL)("promtool", () => {
  it("check rules: the rule file is valid", () => {
    const r = promtool(["check", "rules", RULES]);
    expect(r.output).toContain("SUCCESS");
    expect(r.status).toBe(0);
  });

  it("test rules: each alert fires (and stays silent) on the unit test's input series", () => {
    const r = promtool(["test", "rules", RULE_TESTS]);
    expect(r.output).toContain("SUCCESS");
    expect(r.status).toBe(0);
  });

  it("test rules fails when an expected alert is not met (the check can fail)", () => {
    const broken = readFileSync(RULE_TESTS, "utf8").replace("description: \"3 gateway records", 'description: "4 gateway records');
    const dir = mkdtempSync(join(tmpdir(), "voxgate-rules-"));
    try {
      copyFileSync(RULES, join(dir, "voxgate-rules.yml"));
      writeFileSync(join(dir, "broken.test.yml"), broken);
      const r = promtool(["test", "rules", join(dir, "broken.test.yml")]);
      expect(r.output).toContain("VoxgateRecordsDropped");
      expect(r.status).not.toBe(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("Grafana dashboard shape", () => {
  it("has a title, uid, schemaVersion 39+, a Prometheus datasource variable and panels with targets", () => {
    expect(board.title).toBe("Voxgate");
    expect(board.uid).toMatch(/^[a-zA-Z0-9_-]{1,40}$/);
    expect(board.schemaVersion).toBeGreaterThanOrEqual(39);
    expect(board.templating.list).toContainEqual(expect.objectContaining({ name: "datasource", type: "datasource", query: "prometheus" }));
    expect(board.panels.length).toBeGreaterThan(0);
    for (const p of board.panels) {
      expect(typeof p.type).toBe("string");
      expect(p.title).not.toBe("");
      for (const k of ["h", "w", "x", "y"] as const) expect(Number.isInteger(p.gridPos[k])).toBe(true);
      expect(p.gridPos.x + p.gridPos.w).toBeLessThanOrEqual(24);
      if (p.type === "row") continue;
      expect(p.targets?.length, p.title).toBeGreaterThan(0);
      // Each target queries Voxgate's own series (or Prometheus' `up` for the scrape itself).
      for (const t of p.targets ?? []) expect(metricNames(t.expr).length > 0 || /\bup\{/.test(t.expr), `${p.title}: ${t.expr}`).toBe(true);
    }
    const ids = board.panels.map((p) => (p as { id?: number }).id);
    expect(new Set(ids).size).toBe(ids.length);
  });
});

describe("every metric queried exists in GET /v1/metrics", () => {
  const deepgram = new DeepgramStub();
  let app: Awaited<ReturnType<typeof gatewayApp>>;
  let stream: OpenSocket;
  let exposition = "";

  beforeAll(async () => {
    await deepgram.start();
    app = await gatewayApp(`${KEYS_YAML}
providers:
  deepgram: { api_key: "${PROVIDER_KEY}", base_url: "${deepgram.url}/v1" }
models:
  stt:
    deepgram/nova-3: { provider: deepgram, model: nova-3 }
projects:
  ops: { daily_budget: 10 }
`);
    // A little traffic: recorded calls (cost, calls, latency), an open stream, a failed diagnostics run.
    await insertRequests(app.services.database.db, [
      row({ agoMs: 5 * MIN, project: "ops", cost_usd: "0.5", ttfb_ms: 300, total_latency_ms: 900 }),
      row({ agoMs: HOUR, project: "ops", model_id: "deepgram/nova-3", modality: "stt", cost_usd: "0.2", ttfb_ms: 150, total_latency_ms: 2000 }),
    ]);
    const [run] = await app.services.database.db.insert(diagRuns).values({ verdict: "FAIL", finishedAt: new Date() }).returning();
    if (!run) throw new Error("no diagnostics run");
    await app.services.database.db.insert(diagGates).values({ runId: run.id, gateId: "llm_ttfb", status: "FAIL" });
    const ws = app.base.replace("http://", "ws://");
    stream = opened(
      await openWs(`${ws}/deepgram/v1/listen?model=nova-3&encoding=linear16&sample_rate=16000&channels=1`, {
        headers: { authorization: `Token ${OPERATOR_KEY}`, "x-voxgate-project": "ops" },
      }),
    );
    stream.ws.send(pseudoAudio(3200));
    await waitFor(stream, (m) => String(m).includes("Results"));
    // Scraped as the README says: a static `read` key without tenant_id, not the operator's `*` key.
    const res = await app.call("GET", "/v1/metrics", { key: READ_KEY });
    expect(res.status).toBe(200);
    exposition = await res.text();
  });
  afterAll(async () => {
    stream?.ws.close(1000);
    await stream?.closed;
    await app?.close();
    await deepgram.stop();
  });

  const sampleLines = () => exposition.split("\n").filter((l) => l !== "" && !l.startsWith("#"));
  const exposed = () => new Set(sampleLines().map((l) => l.split(/[{ ]/, 1)[0]));

  for (const [what, exprs] of [
    ["the rules", ruleExprs],
    ["the dashboard", boardExprs],
  ] as const) {
    it(`${what}: every voxgate_ metric name has samples`, () => {
      const names = [...new Set(exprs.flatMap(metricNames))].sort();
      expect(names.length).toBeGreaterThan(0);
      expect(names.filter((n) => !exposed().has(n) && !AFTER_EVENTS.has(n))).toEqual([]);
    });

    it(`${what}: every label="value" matcher matches a published sample`, () => {
      const missing = exprs
        .flatMap(equalityMatchers)
        .filter(({ name, label, value }) => !sampleLines().some((l) => l.startsWith(`${name}{`) && l.includes(`${label}="${value}"`)));
      expect(missing).toEqual([]);
    });
  }

  it("a name Voxgate does not publish is caught", () => {
    expect(exposed().has("voxgate_budget_spend_ratio")).toBe(false);
    expect(exposed().has("voxgate_gateway_open_streams")).toBe(true);
  });
});
