import { randomUUID } from "node:crypto";
import { sql } from "drizzle-orm";
import { beforeAll, describe, expect, it } from "vitest";
import { requests } from "../../src/db/schema/index.js";
import { useTestApp } from "../support/app.js";

const ADMIN = "ops-admin-key-0123456789";
const ACME_READER = "acme-reader-key-0123456789";
const yaml = `
auth:
  api_keys:
    - ${ADMIN}
    - { key: ${ACME_READER}, scopes: [read], tenant_id: acme }
`;

type Row = typeof requests.$inferInsert;
const OCT = "from=2026-10-01&to=2026-11-01";

function row(r: Partial<Row> & Pick<Row, "modality" | "modelId">): Row {
  return {
    id: randomUUID(),
    ts: new Date("2026-10-15T12:00:00Z"),
    provider: r.modelId.split("/")[0] ?? "",
    status: "success",
    pricing: "priced",
    ...r,
  };
}

// A data set whose expected totals are worked out by hand below.
const DATA: Row[] = [
  // acme: 5 rows in October
  row({ tenantId: "acme", modality: "llm", modelId: "openai/gpt-4.1-mini", costUsd: "0.0012345678", ratedPriceUsd: "0.0015432098", rateRule: "cost_plus:1.25", inputUnits: 1000, outputUnits: 200 }),
  row({ tenantId: "acme", modality: "llm", modelId: "openai/gpt-4.1-mini", costUsd: "0.001", ratedPriceUsd: "0.00125", rateRule: "cost_plus:1.25", inputUnits: 1000, outputUnits: 300 }),
  row({ tenantId: "acme", modality: "tts", modelId: "elevenlabs/eleven_flash_v2_5", costUsd: "0.05", ratedPriceUsd: "0.3", rateRule: "fixed:0.3/1k_char", inputUnits: 1000 }),
  row({ tenantId: "acme", modality: "stt", modelId: "deepgram/nova-3", costUsd: "0.0077", ratedPriceUsd: "0.01155", rateRule: "cost_plus:1.5", inputUnits: 1 }),
  row({ tenantId: "acme", modality: "llm", modelId: "mystery/model-x", pricing: "unknown", inputUnits: 500, outputUnits: 20 }),
  // acme, outside the window (November): excluded
  row({ tenantId: "acme", ts: new Date("2026-11-05T00:00:00Z"), modality: "llm", modelId: "openai/gpt-4.1-mini", costUsd: "10", ratedPriceUsd: "20" }),
  // acme, exactly at `to`: excluded (to is exclusive); exactly at `from`: included
  row({ tenantId: "acme", ts: new Date("2026-11-01T00:00:00Z"), modality: "llm", modelId: "openai/gpt-4.1-mini", costUsd: "7", ratedPriceUsd: "7" }),
  // globex: 2 rows
  row({ tenantId: "globex", ts: new Date("2026-10-01T00:00:00Z"), modality: "llm", modelId: "openai/gpt-4o", costUsd: "0.1", ratedPriceUsd: "0.125" }),
  row({ tenantId: "globex", modality: "stt", modelId: "deepgram/nova-3", costUsd: "0.2", ratedPriceUsd: "0.3" }),
  // no tenant (operator's own traffic)
  row({ tenantId: null, modality: "tts", modelId: "openai/tts-1", costUsd: "0.5", ratedPriceUsd: "0.5" }),
];

// acme:   revenue 0.0015432098 + 0.00125 + 0.3 + 0.01155 = 0.3143432098
//         cost    0.0012345678 + 0.001   + 0.05 + 0.0077 = 0.0599345678   margin 0.254408642
// globex: revenue 0.125 + 0.3 = 0.425; cost 0.3; margin 0.125
// none:   revenue 0.5; cost 0.5; margin 0
// total:  revenue 1.2393432098; cost 0.8599345678; margin 0.379408642; 8 requests

describe("GET /v1/billing/usage (endpoint 9)", () => {
  const t = useTestApp({ yaml });
  beforeAll(async () => {
    await t.services.database.db.insert(requests).values(DATA);
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
    await t.services.database.db.execute(sql`
      insert into requests (id, ts, tenant_id, modality, model_id, provider, cost_usd, rated_price_usd, pricing)
      select gen_random_uuid(), '2026-09-10T00:00:00Z', 'bulk', 'llm', 'openai/gpt-4o', 'openai', 0.07, 0.1, 'priced'
      from generate_series(1, 10000)`);
    let floatSum = 0;
    for (let i = 0; i < 10_000; i++) floatSum += 0.1;
    expect(floatSum).not.toBe(1000);
    const { body } = await get("from=2026-09-01&to=2026-10-01&tenant=bulk");
    expect(body.totals).toMatchObject({ requests: 10_000, rated_revenue_usd: 1000, recorded_cost_usd: 700, margin_usd: 300 });
  });
});
