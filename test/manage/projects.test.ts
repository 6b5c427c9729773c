import { describe, expect, it } from "vitest";
import { projects } from "../../src/db/schema/index.js";
import { budgetStatus } from "../../src/manage/projects.js";
import { useTestApp } from "../support/app.js";
import { ACME_READER, ACME_WRITER, ADMIN, INGESTER, READER, SECRET_ENV, WRITER, insertRequest, json, manageYaml } from "./fixtures.js";

describe("projects", () => {
  const t = useTestApp({ yaml: manageYaml(), env: SECRET_ENV });

  it("creates a db project (201), lists it with yaml ones and their 24 h stats", async () => {
    const res = await t.call("POST", "/v1/projects", {
      key: WRITER,
      body: { project_id: "sales", name: "Sales", description: "outbound", daily_budget: 10, budget_action: "warn", default_stack: "fast", tags: ["beta"], accent: "#4f46e5" },
    });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ project_id: "sales", source: "db", created: true });

    await insertRequest(t.services.database.db, { project: "sales", cost: "0.1000000001" });
    await insertRequest(t.services.database.db, { project: "sales", cost: "0.2" });
    await insertRequest(t.services.database.db, { project: "sales", cost: "5", ageSeconds: 86_400 + 60 }); // outside the window

    const list = await json<{ projects: { id: string; source: string }[]; stats: Record<string, unknown> }>(
      await t.call("GET", "/v1/projects", { key: READER }),
    );
    expect(list.projects.map((p) => [p.id, p.source])).toEqual([
      ["support", "yaml"],
      ["sales", "db"],
    ]);
    expect(list.projects[1]).toMatchObject({ name: "Sales", description: "outbound", daily_budget: 10, default_stack: "fast", tags: ["beta"], accent: "#4f46e5" });
    expect(list.stats).toEqual({
      support: { cost_today: 0, requests_today: 0 },
      sales: { cost_today: 0.3000000001, requests_today: 2 },
    });
    const dash = await json(await t.call("GET", "/api/projects", { key: READER }));
    expect(dash).toEqual(list);
  });

  it("detail carries today_spend, budget_status, today and costs_today (rolling 24 h)", async () => {
    await insertRequest(t.services.database.db, { project: "sales", cost: "0.05", provider: "deepgram", modelId: "deepgram/nova-3" });
    const d = await json(await t.call("GET", "/v1/projects/sales", { key: READER }));
    expect(d).toMatchObject({
      id: "sales",
      project_id: "sales",
      budget_action: "warn",
      source: "db",
      today_spend: 0.3500000001,
      budget_status: "ok",
      today: { cost_today: 0.3500000001, requests_today: 3 },
      costs_today: {
        total: 0.3500000001,
        by_provider: { openai: 0.3000000001, deepgram: 0.05 },
        by_model: { "openai/gpt-4.1-mini": 0.3000000001, "deepgram/nova-3": 0.05 },
      },
    });
    const yamlDetail = await json(await t.call("GET", "/v1/projects/support", { key: READER }));
    expect(yamlDetail).toMatchObject({ id: "support", source: "yaml", budget_action: "block", daily_budget: 25, today_spend: 0 });
  });

  it("scopes spend to the caller's tenant", async () => {
    await insertRequest(t.services.database.db, { project: "support", cost: "3", tenantId: "acme" });
    await insertRequest(t.services.database.db, { project: "support", cost: "7", tenantId: "globex" });
    const acme = await json(await t.call("GET", "/v1/projects/support", { key: ACME_READER }));
    expect(acme).toMatchObject({ today_spend: 3, today: { requests_today: 1 } });
    const ops = await json(await t.call("GET", "/v1/projects/support", { key: READER }));
    expect(ops).toMatchObject({ today_spend: 10, today: { requests_today: 2 } });
    const list = await json<{ stats: Record<string, { cost_today: number }> }>(await t.call("GET", "/v1/projects", { key: ACME_READER }));
    expect(list.stats.support?.cost_today).toBe(3);
  });

  it("budget_status: ok below 80 %, warning from 80 %, exceeded from 100 %", () => {
    expect(budgetStatus(0, null)).toBe("ok");
    expect(budgetStatus(7.99, 10)).toBe("ok");
    expect(budgetStatus(8, 10)).toBe("warning");
    expect(budgetStatus(10, 10)).toBe("exceeded");
    expect(budgetStatus(0, 0)).toBe("ok");
    expect(budgetStatus(0.01, 0)).toBe("exceeded");
  });

  it("patches a db project and reports the change; 404 for unknown", async () => {
    const res = await t.call("PATCH", "/v1/projects/sales", { key: WRITER, body: { project_id: "sales", daily_budget: 0.4, tags: [] } });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ project_id: "sales", updated: true });
    const d = await json(await t.call("GET", "/v1/projects/sales", { key: READER }));
    expect(d).toMatchObject({ daily_budget: 0.4, tags: [], name: "Sales", budget_status: "warning" });
    expect((await t.call("PATCH", "/v1/projects/nope", { key: WRITER, body: { name: "x" } })).status).toBe(404);
    expect((await t.call("GET", "/v1/projects/nope", { key: READER })).status).toBe(404);
  });

  it("refuses to change or delete a yaml project (403), even the preview", async () => {
    for (const [method, path, body] of [
      ["PATCH", "/v1/projects/support", { name: "x" }],
      ["DELETE", "/v1/projects/support", undefined],
      ["DELETE", "/v1/projects/support?confirm=true", undefined],
    ] as const) {
      const res = await t.call(method, path, { key: ADMIN, body });
      expect(res.status).toBe(403);
      expect(await json(res)).toMatchObject({ error: { code: "forbidden" } });
    }
  });

  it("409 when creating an id that exists (yaml or db)", async () => {
    expect((await t.call("POST", "/v1/projects", { key: WRITER, body: { project_id: "support" } })).status).toBe(409);
    expect((await t.call("POST", "/v1/projects", { key: WRITER, body: { project_id: "sales" } })).status).toBe(409);
  });

  it("rejects bad bodies with 4xx and writes nothing", async () => {
    const before = await t.services.database.db.select().from(projects);
    const bad: unknown[] = [
      {},
      { project_id: "" },
      { project_id: "a/b" },
      { project_id: "x'; DROP TABLE projects; --" },
      { project_id: "ok1", budget_action: "explode" },
      { project_id: "ok1", daily_budget: -1 },
      { project_id: "ok1", daily_budget: "10" },
      { project_id: "ok1", accent: "red" },
      { project_id: "ok1", tags: "prod" },
      { project_id: "ok1", source: "yaml" },
    ];
    for (const body of bad) {
      const res = await t.call("POST", "/v1/projects", { key: WRITER, body });
      expect(res.status, JSON.stringify(body)).toBe(422);
    }
    expect((await t.call("POST", "/v1/projects", { key: WRITER, raw: "{nope", headers: { "content-type": "application/json" } })).status).toBe(400);
    expect((await t.call("PATCH", "/v1/projects/sales", { key: WRITER, body: {} })).status).toBe(422);
    expect((await t.call("PATCH", "/v1/projects/sales", { key: WRITER, body: { project_id: "other" } })).status).toBe(422);
    expect((await t.call("PATCH", "/v1/projects/sales", { key: WRITER, body: { project_id: "sales" } })).status).toBe(422);
    expect(await t.services.database.db.select().from(projects)).toEqual(before);
  });

  it("auth: 401 without a key, 403 for read-only, ingest-only and tenant-bound writers", async () => {
    expect((await t.call("GET", "/v1/projects")).status).toBe(401);
    expect((await t.call("GET", "/api/projects")).status).toBe(401);
    expect((await t.call("GET", "/v1/projects", { key: INGESTER })).status).toBe(403);
    const body = { project_id: "tenantproj" };
    expect((await t.call("POST", "/v1/projects", { key: READER, body })).status).toBe(403);
    expect((await t.call("POST", "/v1/projects", { key: INGESTER, body })).status).toBe(403);
    expect((await t.call("POST", "/v1/projects", { key: ACME_WRITER, body })).status).toBe(403);
    expect((await t.call("DELETE", "/v1/projects/sales?confirm=true", { key: ACME_WRITER })).status).toBe(403);
    expect((await t.call("GET", "/v1/projects/tenantproj", { key: READER })).status).toBe(404);
    for (const id of ["x%27%20OR%20%271%27%3D%271", "%3B%20DROP%20TABLE%20projects", "..%2F..%2Fetc"]) {
      expect((await t.call("GET", `/v1/projects/${id}`, { key: READER })).status, id).toBe(404);
      expect((await t.call("DELETE", `/v1/projects/${id}?confirm=true`, { key: WRITER })).status, id).toBe(404);
    }
  });

  it("DELETE previews without confirm=true, deletes with it", async () => {
    const preview = await t.call("DELETE", "/v1/projects/sales", { key: WRITER });
    expect(preview.status).toBe(200);
    expect(await preview.json()).toEqual({ would_delete: { project_id: "sales" } });
    expect((await t.call("DELETE", "/v1/projects/sales?confirm=false", { key: WRITER })).status).toBe(200);
    expect((await t.call("GET", "/v1/projects/sales", { key: READER })).status).toBe(200);
    expect((await t.call("DELETE", "/v1/projects/sales?confirm=maybe", { key: WRITER })).status).toBe(422);

    const del = await t.call("DELETE", "/v1/projects/sales?confirm=true", { key: WRITER });
    expect(await del.json()).toEqual({ deleted: "sales" });
    expect((await t.call("GET", "/v1/projects/sales", { key: READER })).status).toBe(404);
    expect((await t.call("DELETE", "/v1/projects/sales?confirm=true", { key: WRITER })).status).toBe(404);
  });
});
