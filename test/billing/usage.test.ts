import { randomUUID } from "node:crypto";
import { beforeAll, describe, expect, it } from "vitest";
import type { RequestRow } from "../../src/db/schema/requests.js";
import { useTestApp } from "../support/app.js";
import { authYaml, KEYS } from "../support/fixtures.js";
import { seedRequests } from "../support/seed.js";

const ADMIN = KEYS.ops;
const ACME_READER = KEYS.acmeReader;
const yaml = authYaml("ops", "acmeReader");

type Row = RequestRow;
const OCT = "from=2026-10-01&to=2026-11-01";

function row(r: Partial<Row> & Pick<Row, "modality" | "model_id">): Row {
  return {
    id: randomUUID(),
    ts: new Date("2026-10-15T12:00:00Z"),
    provider: r.model_id.split("/")[0] ?? "",
    status: "success",
    pricing: "priced",
    ...r,
  };
}

// A data set whose expected totals are worked out by hand below.
const DATA: Row[] = [
  // acme: 5 rows in October
  row({ tenant_id: "acme", modality: "llm", model_id: "openai/gpt-4.1-mini", cost_usd: "0.0012345678", rated_price_usd: "0.0015432098", rate_rule: "cost_plus:1.25", input_units: 1000, output_units: 200 }),
  row({ tenant_id: "acme", modality: "llm", model_id: "openai/gpt-4.1-mini", cost_usd: "0.001", rated_price_usd: "0.00125", rate_rule: "cost_plus:1.25", input_units: 1000, output_units: 300 }),
  row({ tenant_id: "acme", modality: "tts", model_id: "elevenlabs/eleven_flash_v2_5", cost_usd: "0.05", rated_price_usd: "0.3", rate_rule: "fixed:0.3/1k_char", input_units: 1000 }),
  row({ tenant_id: "acme", modality: "stt", model_id: "deepgram/nova-3", cost_usd: "0.0077", rated_price_usd: "0.01155", rate_rule: "cost_plus:1.5", input_units: 1 }),
  row({ tenant_id: "acme", modality: "llm", model_id: "mystery/model-x", pricing: "unknown", input_units: 500, output_units: 20 }),
  // acme, outside the window (November): excluded
  row({ tenant_id: "acme", ts: new Date("2026-11-05T00:00:00Z"), modality: "llm", model_id: "openai/gpt-4.1-mini", cost_usd: "10", rated_price_usd: "20" }),
  // acme, exactly at `to`: excluded (to is exclusive); exactly at `from`: included
  row({ tenant_id: "acme", ts: new Date("2026-11-01T00:00:00Z"), modality: "llm", model_id: "openai/gpt-4.1-mini", cost_usd: "7", rated_price_usd: "7" }),
  // globex: 2 rows
  row({ tenant_id: "globex", ts: new Date("2026-10-01T00:00:00Z"), modality: "llm", model_id: "openai/gpt-4o", cost_usd: "0.1", rated_price_usd: "0.125" }),
  row({ tenant_id: "globex", modality: "stt", model_id: "deepgram/nova-3", cost_usd: "0.2", rated_price_usd: "0.3" }),
  // no tenant (operator's own traffic)
  row({ tenant_id: null, modality: "tts", model_id: "openai/tts-1", cost_usd: "0.5", rated_price_usd: "0.5" }),
];

// acme:   revenue 0.0015432098 + 0.00125 + 0.3 + 0.01155 = 0.3143432098
//         cost    0.0012345678 + 0.001   + 0.05 + 0.0077 = 0.0599345678   margin 0.254408642
// globex: revenue 0.125 + 0.3 = 0.425; cost 0.3; margin 0.125
// none:   revenue 0.5; cost 0.5; margin 0
// total:  revenue 1.2393432098; cost 0.8599345678; margin 0.379408642; 8 requests

describe("GET /v1/billing/usage", () => {
  const t = useTestApp({ yaml });
  beforeAll(async () => {
    await seedRequests(t.services.database.db, DATA);
  });

  const get = async (query: string, key = ADMIN) => {
    const res = await t.call("GET", `/v1/billing/usage?${query}`, { key });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> & { tenants: Record<string, unknown>[] } };
  };

  it("reports revenue, cost and margin per tenant, exact to 10 decimals, largest revenue first", async () => {
    const { status, body } = await get(OCT);
    expect(status).toBe(200);
    expect(body.from).toBe("2026-10-01T00:00:00.000Z");
    expect(body.to).toBe("2026-11-01T00:00:00.000Z");
    expect(body.tenants.map((x) => x.tenant)).toEqual([null, "globex", "acme"]);
    const acme = body.tenants.find((x) => x.tenant === "acme");
    expect(acme).toMatchObject({
      requests: 5,
      rated_revenue_usd: 0.3143432098,
      recorded_cost_usd: 0.0599345678,
      margin_usd: 0.254408642,
      unpriced_requests: 1,
      uncosted_requests: 1,
    });
    expect(body.tenants.find((x) => x.tenant === "globex")).toMatchObject({ requests: 2, rated_revenue_usd: 0.425, recorded_cost_usd: 0.3, margin_usd: 0.125 });
    expect(body.totals).toMatchObject({ requests: 8, rated_revenue_usd: 1.2393432098, recorded_cost_usd: 0.8599345678, margin_usd: 0.379408642 });
    expect(body.line_items).toBeUndefined();
  });

  it("with tenant, adds line items per (modality, model)", async () => {
    const { body } = await get(`${OCT}&tenant=acme`);
    expect(body.tenants.map((x) => x.tenant)).toEqual(["acme"]);
    const items = body.line_items as Record<string, unknown>[];
    expect(items.map((i) => `${i.modality} ${i.model_id}`)).toEqual([
      "tts elevenlabs/eleven_flash_v2_5",
      "stt deepgram/nova-3",
      "llm openai/gpt-4.1-mini",
      "llm mystery/model-x",
    ]);
    expect(items[2]).toMatchObject({
      requests: 2,
      input_units: 2000,
      output_units: 500,
      rated_revenue_usd: 0.0027932098,
      recorded_cost_usd: 0.0022345678,
      margin_usd: 0.000558642,
      rate_rules: ["cost_plus:1.25"],
      unit: "1m_token",
    });
    expect(items[3]).toMatchObject({ requests: 1, rated_revenue_usd: 0, unpriced_requests: 1 });
  });

  it("a tenant key sees only its own tenant, and another tenant's name is a 404", async () => {
    const { status, body } = await get(OCT, ACME_READER);
    expect(status).toBe(200);
    expect(body.tenants.map((x) => x.tenant)).toEqual(["acme"]);
    expect(body.totals).toMatchObject({ requests: 5, rated_revenue_usd: 0.3143432098 });
    expect(Array.isArray(body.line_items)).toBe(true);
    expect((await get(`${OCT}&tenant=globex`, ACME_READER)).status).toBe(404);
    expect((await get(`${OCT}&tenant=acme`, ACME_READER)).status).toBe(200);
  });

  it("defaults to the current calendar month (UTC), and `to` alone means the month before it", async () => {
    const { body } = await get("");
    const now = new Date();
    expect(body.from).toBe(new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1)).toISOString());
    expect(body.to).toBe(new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1)).toISOString());
    const { body: oct } = await get("to=2026-11-01");
    expect(oct.from).toBe("2026-10-01T00:00:00.000Z");
    expect((oct.totals as { requests: number }).requests).toBe(8);
  });

  it("rejects bad windows with 422 and needs read scope", async () => {
    expect((await get("from=2026-13-45")).status).toBe(422);
    expect((await get("from=yesterday")).status).toBe(422);
    expect((await get("from=2026-11-01&to=2026-10-01")).status).toBe(422);
    expect((await t.call("GET", `/v1/billing/usage?${OCT}`)).status).toBe(401);
  });

  it("sums money in the database: 10,000 × $0.1 is exactly $1000 (a float sum drifts)", async () => {
    const bulk = Array.from({ length: 10_000 }, () =>
      row({ tenant_id: "bulk", ts: new Date("2026-09-10T00:00:00Z"), modality: "llm", model_id: "openai/gpt-4o", cost_usd: "0.07", rated_price_usd: "0.1" }),
    );
    for (let i = 0; i < bulk.length; i += 2_000) await seedRequests(t.services.database.db, bulk.slice(i, i + 2_000));
    let floatSum = 0;
    for (let i = 0; i < 10_000; i++) floatSum += 0.1;
    expect(floatSum).not.toBe(1000);
    const { body } = await get("from=2026-09-01&to=2026-10-01&tenant=bulk");
    expect(body.totals).toMatchObject({ requests: 10_000, rated_revenue_usd: 1000, recorded_cost_usd: 700, margin_usd: 300 });
  });
});
