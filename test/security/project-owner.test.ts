import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ACME_KEY, GLOBEX_KEY, openaiChatYaml, OPERATOR_KEY, recordedRows } from "../gateway/support.js";
import { record } from "../ingest/helpers.js";
import { useTestApp } from "../support/app.js";
import { openaiChatStub } from "../support/stubs/openai-chat.js";
import type { StubServer } from "../support/stubs/stub-server.js";

/**
 * Projects across tenants. An owned project (`projects.<id>.tenant_id`, or `tenant_id` set by an
 * operator key through the API) takes gateway calls only from its tenant's keys and operator keys:
 * another tenant naming it (header or /p/ prefix) is refused 403 before any vendor is contacted, and
 * its ingested rows naming it are skipped. A shared project's budget is one budget for all tenants:
 * the budget_status every tenant reads is the one the gateway decides on.
 */
let stub: StubServer;
beforeAll(async () => {
  stub = await openaiChatStub().start();
});
afterAll(async () => {
  await stub?.close();
});
const t = useTestApp(() => ({
  listen: true,
  yaml: `${openaiChatYaml(stub.url)}projects:
  acme-voice: { tenant_id: acme, daily_budget: 0.000001, budget_action: block }
  shared-pool: { daily_budget: 0.000001, budget_action: block }
`,
}));

const chat = (key: string, project: string, viaPath = false) =>
  fetch(viaPath ? `${t.base}/p/${project}/s/s1/openai/v1/chat/completions` : `${t.base}/openai/v1/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json", ...(viaPath ? {} : { "x-voxgate-project": project }) },
    body: JSON.stringify({ model: "openai/gpt-4.1-mini", messages: [{ role: "user", content: "hello" }] }),
  });

describe("project ownership", () => {
  it("another tenant's key naming an owned project is refused 403 before any vendor call, by header and by path", async () => {
    const before = stub.hits.length;
    for (const viaPath of [false, true]) {
      const res = await chat(GLOBEX_KEY, "acme-voice", viaPath);
      expect(res.status).toBe(403);
      expect(await res.text()).toContain("another tenant");
    }
    expect(stub.hits.length).toBe(before);
    expect((await recordedRows(t)).filter((r) => r.project === "acme-voice")).toHaveLength(0);
  });

  it("the owner's key and operator keys are served", async () => {
    expect((await chat(ACME_KEY, "acme-voice")).status).toBe(200);
  });

  it("tenant_id is set by operator keys through the API, shown on reads; tenant keys keep their 403", async () => {
    const created = await t.call("POST", "/v1/projects", { key: OPERATOR_KEY, body: { project_id: "globex-bot", tenant_id: "globex" } });
    expect(created.status).toBe(200);
    const read = await t.call("GET", "/v1/projects/globex-bot", { key: OPERATOR_KEY });
    expect((await read.json()).tenant_id).toBe("globex");
    const list = await t.call("GET", "/v1/projects", { key: OPERATOR_KEY });
    const yamlOne = ((await list.json()) as { projects: { id: string; tenant_id: string | null }[] }).projects.find((p) => p.id === "acme-voice");
    expect(yamlOne?.tenant_id).toBe("acme");
    expect((await t.call("PATCH", "/v1/projects/globex-bot", { key: GLOBEX_KEY, body: { tenant_id: "globex" } })).status).toBe(403);
    const moved = await t.call("PATCH", "/v1/projects/globex-bot", { key: OPERATOR_KEY, body: { tenant_id: "acme" } });
    expect(moved.status).toBe(200);
    await t.services.gateway.refresh();
    expect((await chat(GLOBEX_KEY, "globex-bot")).status).toBe(403);
    const cleared = await t.call("PATCH", "/v1/projects/globex-bot", { key: OPERATOR_KEY, body: { tenant_id: null } });
    expect(cleared.status).toBe(200);
    expect((await (await t.call("GET", "/v1/projects/globex-bot", { key: OPERATOR_KEY })).json()).tenant_id).toBeNull();
  });

  it("ingest skips another tenant's rows naming an owned project (they cannot spend its budget)", async () => {
    const res = await t.call("POST", "/v1/ingest", { key: GLOBEX_KEY, body: [record({ project: "acme-voice", cost_usd: 50 }), record({ project: "shared-pool", cost_usd: 0 })] });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { accepted: number; skipped: number; skipped_records: { reason: string }[] };
    expect(body).toMatchObject({ accepted: 1, skipped: 1 });
    expect(body.skipped_records[0]?.reason).toContain("project");
  });
});

describe("shared projects: one budget, and every tenant reads the status the gateway decides on", () => {
  it("after one tenant spends the shared budget, the other tenant's call is refused 402 and its read says exceeded", async () => {
    expect((await chat(ACME_KEY, "shared-pool")).status).toBe(200);
    await t.services.gateway.recorder.flush();
    await t.services.gateway.refresh();
    const blocked = await chat(GLOBEX_KEY, "shared-pool");
    expect(blocked.status).toBe(402);
    const view = (await (await t.call("GET", "/v1/projects/shared-pool", { key: GLOBEX_KEY })).json()) as { budget_status: string; today_spend: number };
    expect(view.budget_status).toBe("exceeded");
    // Its own spend stays its own figure.
    expect(view.today_spend).toBe(0);
  });
});
