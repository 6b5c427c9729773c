import { randomUUID } from "node:crypto";
import { beforeAll, describe, expect, it } from "vitest";
import type { RequestRow } from "../../src/db/schema/requests.js";
import { EXPORT_COLUMNS, EXPORT_PAGE_ROWS } from "../../src/reports/export.js";
import { MCP_YAML, seedCalls } from "../mcp/support.js";
import { useTestApp } from "../support/app.js";
import { KEYS } from "../support/fixtures.js";
import { seedRequests } from "../support/seed.js";
import { runCli } from "../support/spawn.js";

const WINDOW_START = Date.parse("2026-03-01T00:00:00Z");

/** Export rows far in the past (out of every rolling report window): a page and a bit, many sharing one timestamp. */
function exportRows(n: number): RequestRow[] {
  return Array.from({ length: n }, (_, i) => ({
    id: randomUUID(),
    // Groups of 7 rows on one microsecond-exact timestamp, so a page boundary falls inside a group.
    ts: new Date(WINDOW_START + Math.floor(i / 7) * 1000),
    tenant_id: i % 2 === 0 ? "acme" : "globex",
    project: i === 0 ? '=HYPERLINK("x"),"quoted"' : "export",
    modality: "llm",
    model_id: "openai/gpt-4.1-mini",
    provider: "openai",
    cost_usd: "0.0000000001",
    input_tokens: i,
  }));
}

describe("remote CLI commands against a running server", () => {
  const t = useTestApp({ yaml: MCP_YAML, listen: true });
  const total = EXPORT_PAGE_ROWS + 3;
  beforeAll(async () => {
    await seedCalls(t.services.database.db);
    await seedRequests(t.services.database.db, exportRows(total));
  }, 240_000);

  const cli = (args: string[], key: string = KEYS.ops) => runCli(args, { VOXGATE_URL: t.base, VOXGATE_API_KEY: key });
  const route = async (path: string, key: string = KEYS.ops, method = "GET") => {
    const res = await t.call(method, path, { key });
    expect(res.status, path).toBe(200);
    return res.json();
  };

  it("prints each route's JSON with --json, the same as the route answers", async () => {
    const cases: [string[], string, string?][] = [
      [["status"], "/v1/status"],
      [["costs", "--period", "week", "--project", "support"], "/v1/costs?period=week&project=support"],
      [["costs"], "/v1/costs", KEYS.acmeReader],
      [["logs", "--modality", "stt", "--status", "error", "--limit", "5"], "/api/logs?modality=stt&status=error&limit=5"],
      [["sessions", "--project", "support", "--room", "room-acme"], "/v1/sessions?project=support&room=room-acme"],
      [["session", "s-acme-1"], "/v1/sessions/s-acme-1", KEYS.acmeReader],
      [["calls"], "/api/calls"],
      [["rates", "gaps"], "/v1/billing/rate-card/gaps"],
    ];
    const runs = await Promise.all(cases.map(([args, , key]) => cli([...args, "--json"], key)));
    for (const [i, [args, path, key]] of cases.entries()) {
      const run = runs[i];
      expect(run?.code, `${args.join(" ")}: ${run?.stderr}`).toBe(0);
      expect(JSON.parse(run?.stdout ?? ""), args.join(" ")).toEqual(await route(path, key));
    }
    // The filters reached the server: one error row of acme's stt, sessions of one room.
    expect(JSON.parse(runs[3]?.stdout ?? "")).toHaveLength(1);
    expect(JSON.parse(runs[4]?.stdout ?? "").map((s: { id: string }) => s.id)).toEqual(["s-acme-1"]);
  }, 240_000);

  it("prints tables without --json", async () => {
    const [status, costs, gaps] = await Promise.all([cli(["status"]), cli(["costs", "--period", "week"]), cli(["rates", "gaps"])]);
    expect(status.stdout).toMatch(/^provider\s+configured\s+type/m);
    expect(status.stdout).toMatch(/^openai\s+true/m);
    expect(costs.stdout).toContain("period: week");
    expect(costs.stdout).toMatch(/^provider\s+cost\s+requests/m);
    expect(gaps.code, gaps.stderr).toBe(0);
    expect(gaps.stdout.length).toBeGreaterThan(0);
  }, 240_000);

  it("streams export-costs as CSV (header, one row per record across pages) and as one JSON array", async () => {
    const from = "2026-03-01";
    const to = "2026-03-02T00:00:00Z";
    const csv = await cli(["export-costs", "--from", from, "--to", to]);
    expect(csv.code, csv.stderr).toBe(0);
    const lines = csv.stdout.split("\r\n");
    expect(lines[0]).toBe(EXPORT_COLUMNS.join(","));
    expect(lines.at(-1)).toBe("");
    // One line per record: the quoted field with commas and quotes stays one field on one line.
    expect(lines.length - 2).toBe(total);
    expect(csv.stdout).toContain(`"'=HYPERLINK(""x""),""quoted"""`);
    const json = await cli(["export-costs", "--from", from, "--to", to, "--format", "json"]);
    const rows = JSON.parse(json.stdout) as { id: string; tenant_id: string; input_tokens: number; cost_usd: number }[];
    expect(rows).toHaveLength(total);
    expect(new Set(rows.map((r) => `${r.tenant_id}/${r.id}`)).size).toBe(total);
    expect(rows.map((r) => r.input_tokens).sort((a, b) => a - b)).toEqual(Array.from({ length: total }, (_, i) => i));
    expect(rows[0]?.cost_usd).toBe(1e-10);
    // The route answers the same bytes; a tenant key exports its own rows only.
    const res = await t.call("GET", `/v1/costs/export?from=${from}&to=${encodeURIComponent(to)}&format=json`, { key: KEYS.ops });
    expect(res.headers.get("content-type")).toContain("application/json");
    expect(await res.text()).toBe(json.stdout);
    const acme = JSON.parse((await cli(["export-costs", "--from", from, "--to", to, "--json"], KEYS.acmeReader)).stdout) as { tenant_id: string }[];
    expect(acme).toHaveLength(Math.ceil(total / 2));
    expect(new Set(acme.map((r) => r.tenant_id))).toEqual(new Set(["acme"]));
  }, 240_000);

  it("refuses bad input (the server's refusals exit 2 with its message), an unreachable server with exit 1", async () => {
    const [badDate, backwards, noScope, missing, down] = await Promise.all([
      cli(["export-costs", "--from", "yesterday", "--to", "2026-03-02"]),
      cli(["export-costs", "--from", "2026-03-02", "--to", "2026-03-01"]),
      cli(["rotate-secret"], KEYS.reader),
      cli(["session", "no-such-session"]),
      runCli(["status"], { VOXGATE_URL: "http://127.0.0.1:9", VOXGATE_API_KEY: KEYS.ops }),
    ]);
    // An argument commander refuses exits 1 with its message, as for the existing commands (latency --since).
    expect(badDate.code).toBe(1);
    expect(badDate.stderr).toContain("YYYY-MM-DD");
    expect(backwards.code).toBe(2);
    expect(backwards.stderr).toContain("from must be before to");
    expect(noScope.code).toBe(2);
    expect(noScope.stderr).toContain("admin");
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain("no session");
    expect(down.code).toBe(1);
    expect(down.stderr).toContain("127.0.0.1:9");
  }, 240_000);

  it("rotate-secret answers what POST /v1/secrets/rotate does", async () => {
    const run = await cli(["rotate-secret", "--json"]);
    expect(run.code, run.stderr).toBe(0);
    expect(JSON.parse(run.stdout)).toEqual(await route("/v1/secrets/rotate", KEYS.ops, "POST"));
    expect(JSON.parse(run.stdout)).toEqual({ reencrypted: 0, unreadable: 0 });
  }, 240_000);
});
