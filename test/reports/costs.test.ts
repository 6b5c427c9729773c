import { beforeAll, describe, expect, it } from "vitest";
import { useTestApp } from "../support/app.js";
import { DAY, HOUR, insertRequests, KEYS, MIN, REPORTS_YAML, row } from "./fixtures.js";

interface Line {
  cost: number;
  requests: number;
}
interface CostBody {
  period: string;
  project: string | null;
  total: number;
  by_provider: Record<string, Line>;
  by_model: Record<string, Line>;
  by_project: Record<string, Line>;
}

const GPT = "openai/gpt-4.1-mini";
const NOVA = "deepgram/nova-3";
const FLASH = "elevenlabs/eleven_flash_v2_5";

describe("GET /v1/costs and /api/costs", () => {
  const t = useTestApp({ yaml: REPORTS_YAML });
  beforeAll(async () => {
    const db = t.services.database.db;
    const acme = { tenant_id: "acme" };
    // Three batches, so rollup rows are created and then merged by later batches.
    await insertRequests(db, [
      row({ ...acme, agoMs: 10 * MIN, project: "support", cost_usd: "0.1000000000" }),
      row({ ...acme, agoMs: 5 * HOUR, model_id: NOVA, modality: "stt", project: "support", cost_usd: "0.2" }),
      row({ ...acme, agoMs: 3 * DAY, project: "support", cost_usd: "10.01" }),
      row({ tenant_id: "globex", agoMs: HOUR, project: "support", cost_usd: "7.77" }),
    ]);
    await insertRequests(db, [
      row({ ...acme, agoMs: 23.5 * HOUR, model_id: FLASH, modality: "tts", project: "sales", cost_usd: "1.2345678901" }),
      row({ ...acme, agoMs: 10 * DAY, model_id: NOVA, modality: "stt", project: "sales", cost_usd: "5" }),
      row({ ...acme, agoMs: 45 * DAY, project: "support", cost_usd: "100.0000000001" }),
      row({ ...acme, agoMs: 2 * HOUR, project: "support", cost_usd: "0.05", is_probe: true }),
      row({ tenant_id: "globex", agoMs: 40 * DAY, cost_usd: "3" }),
      row({ agoMs: 2 * HOUR, model_id: NOVA, modality: "stt", cost_usd: "0.33" }),
    ]);
    await insertRequests(db, [row({ ...acme, agoMs: 30 * MIN, project: "support", cost_usd: null, pricing: "unknown" })]);
  });

  const get = async (path: string, key = KEYS.ops) => {
    const res = await t.call("GET", path, { key });
    return { status: res.status, body: (await res.json()) as CostBody };
  };

  it("defaults to today, a rolling 24 h window, probe spend included", async () => {
    const { status, body } = await get("/v1/costs", KEYS.acme);
    expect(status).toBe(200);
    expect(body.period).toBe("today");
    expect(body.project).toBeNull();
    // 0.1 + 0.2 + 1.2345678901 (23.5 h ago) + 0.05 (probe) + 0 (unpriced)
    expect(body.total).toBe(1.5845678901);
    expect(body.by_provider).toEqual({
      openai: { cost: 0.15, requests: 3 },
      deepgram: { cost: 0.2, requests: 1 },
      elevenlabs: { cost: 1.2345678901, requests: 1 },
    });
  });

  it("week, month and all widen the window exactly to the cent (and the 10th decimal)", async () => {
    expect((await get("/v1/costs?period=week", KEYS.acme)).body.total).toBe(11.5945678901);
    expect((await get("/v1/costs?period=month", KEYS.acme)).body.total).toBe(16.5945678901);
    const all = (await get("/v1/costs?period=all", KEYS.acme)).body;
    expect(all.period).toBe("all");
    expect(all.total).toBe(116.5945678902);
    expect(all.by_provider).toEqual({
      openai: { cost: 110.1600000001, requests: 5 },
      deepgram: { cost: 5.2, requests: 2 },
      elevenlabs: { cost: 1.2345678901, requests: 1 },
    });
    expect(all.by_model).toEqual({
      [GPT]: { cost: 110.1600000001, requests: 5 },
      [NOVA]: { cost: 5.2, requests: 2 },
      [FLASH]: { cost: 1.2345678901, requests: 1 },
    });
    expect(all.by_project).toEqual({
      support: { cost: 110.3600000001, requests: 6 },
      sales: { cost: 6.2345678901, requests: 2 },
    });
  });

  it("filters by project", async () => {
    const { body } = await get("/v1/costs?project=sales", KEYS.acme);
    expect(body.project).toBe("sales");
    expect(body.total).toBe(1.2345678901);
    expect(body.by_project).toEqual({ sales: { cost: 1.2345678901, requests: 1 } });
    expect((await get("/v1/costs?period=all&project=nope", KEYS.acme)).body).toMatchObject({ total: 0, by_provider: {}, by_model: {}, by_project: {} });
  });

  it("tenant keys see only their tenant; operators see all", async () => {
    const globex = (await get("/v1/costs?period=all", KEYS.globex)).body;
    expect(globex.total).toBe(10.77);
    expect(globex.by_project).toEqual({ support: { cost: 7.77, requests: 1 }, default: { cost: 3, requests: 1 } });
    expect((await get("/v1/costs?period=week", KEYS.globex)).body.total).toBe(7.77);
    const ops = (await get("/v1/costs?period=all")).body;
    expect(ops.total).toBe(127.6945678902);
    expect(Object.values(ops.by_provider).reduce((n, l) => n + l.requests, 0)).toBe(11);
    expect((await get("/v1/costs")).body.total).toBe(9.6845678901);
    // A tenant query parameter is not a way around the key's tenant.
    expect((await get("/v1/costs?period=all&tenant_id=acme", KEYS.globex)).body.total).toBe(10.77);
  });

  it("refuses unknown periods and bad credentials", async () => {
    const bad = await t.call("GET", "/v1/costs?period=year", { key: KEYS.ops });
    expect(bad.status).toBe(422);
    const err = (await bad.json()) as { error: { code: string; details: { path: string }[] } };
    expect(err.error.code).toBe("validation_failed");
    expect(err.error.details[0]?.path).toBe("period");
    expect((await t.call("GET", "/v1/costs")).status).toBe(401);
    expect((await t.call("GET", "/v1/costs", { key: "wrong-key-000000" })).status).toBe(401);
    expect((await t.call("GET", "/v1/costs", { key: KEYS.ingestOnly })).status).toBe(403);
    expect((await t.call("GET", `/v1/costs?project=${"p".repeat(201)}`, { key: KEYS.ops })).status).toBe(422);
  });

  it("treats SQL metacharacters in filters as plain values and changes nothing", async () => {
    for (const p of ["' OR 1=1 --", "support'; DROP TABLE requests; --", "%", "_", "\\", '"']) {
      const { status, body } = await get(`/v1/costs?period=all&project=${encodeURIComponent(p)}`, KEYS.acme);
      expect(status).toBe(200);
      expect(body.total).toBe(0);
    }
    expect((await get("/v1/costs?period=all", KEYS.acme)).body.total).toBe(116.5945678902);
  });

  it("/api/costs answers from the same function, by_project only without a project filter", async () => {
    const res = await t.call("GET", "/api/costs?period=all", { key: KEYS.acme });
    expect(res.status).toBe(200);
    const body = (await res.json()) as CostBody;
    const v1 = (await get("/v1/costs?period=all", KEYS.acme)).body;
    expect(body).toEqual({ period: "all", total: v1.total, by_provider: v1.by_provider, by_model: v1.by_model, by_project: v1.by_project });
    const filtered = (await (await t.call("GET", "/api/costs?project=sales", { key: KEYS.acme })).json()) as Record<string, unknown>;
    expect(filtered).not.toHaveProperty("by_project");
    expect(filtered.total).toBe(1.2345678901);
    expect((await t.call("GET", "/api/costs?period=forever", { key: KEYS.acme })).status).toBe(422);
    expect((await t.call("GET", "/api/costs")).status).toBe(401);
  });
});
