import { randomUUID } from "node:crypto";
import { beforeAll, describe, expect, it } from "vitest";
import { QUOTE_BATCH_MAX } from "../../src/billing/routes.js";
import type { RequestRow } from "../../src/db/schema/requests.js";
import { type TestApp, useTestApp } from "../support/app.js";
import { authYaml, KEYS, RULES } from "../support/fixtures.js";
import { seedRequests } from "../support/seed.js";

const ACME = KEYS.acmeReader;
const yaml = (gate: string) => `
${authYaml("ops", "acmeReader")}pricing:
  gate: ${gate}
  catalog:
    cartesia/sonic-2: { price_usd: null } # known to the catalog, without a rate: unrated
rate_card:
  default_markup: 1.25
  rules:
    - ${RULES.gptMiniTokens}
    - ${RULES.deepgramCost}
    - ${RULES.acmeTts}
    - { modality: stt, markup: 1.5 }
`;
const OPS = KEYS.ops;
type Json = Record<string, unknown>;

describe("quotes and models", () => {
  const strict = useTestApp({ yaml: yaml("declared_only") });
  const open = useTestApp({ yaml: yaml("permissive") });

  const quote = async (t: TestApp, q: string, key = OPS) => {
    const res = await t.call("GET", `/v1/billing/rate-card/quote?${q}`, { key });
    return { status: res.status, body: (await res.json()) as Json };
  };

  it("an operator token price: serviceable under either gate, priced_by operator", async () => {
    for (const t of [strict, open]) {
      const { status, body } = await quote(t, "modality=llm&model=openai/gpt-4.1-mini");
      expect(status).toBe(200);
      expect(body).toMatchObject({ serviceable: true, priced_by: "operator", priced: true, rule: "tokens:0.6/2.4/0.6/1m_token", cost_basis: null });
      expect((body.effective as Json).rule).toBe("tokens:0.6/2.4/0.6/1m_token");
      expect((body.catalog as Json).found).toBe(true);
    }
    expect((await quote(strict, "modality=llm&model=openai/gpt-4.1-mini")).body.gate).toBe("declared_only");
    expect((await quote(open, "modality=llm&model=openai/gpt-4.1-mini")).body.gate).toBe("permissive");
  });

  it("a catalog price alone: serviceable only under permissive", async () => {
    const s = (await quote(strict, "modality=llm&model=openai/gpt-4o")).body;
    expect(s).toMatchObject({ serviceable: false, priced_by: "catalog", priced: true, effective: null, cost_basis: null, rule: "cost_plus:1.25" });
    expect(s.catalog).toMatchObject({ found: true, rated: true, input_price_usd: 2.5, output_price_usd: 10, unit: "1m_token" });
    expect((await quote(open, "modality=llm&model=openai/gpt-4o")).body).toMatchObject({ serviceable: true, priced_by: "catalog" });
  });

  it("a declared cost alone makes a model serviceable (even unknown to the catalog)", async () => {
    const { body } = await quote(strict, "modality=stt&model=deepgram/custom-model");
    expect(body).toMatchObject({ serviceable: true, priced_by: "operator", priced: true });
    expect((body.cost_basis as Json).rule).toBe("fixed:0.0043/minute");
    expect((body.effective as Json).rule).toBe("cost_plus:1.5");
    expect((body.catalog as Json).found).toBe(false);
  });

  it("unknown and unrated models are not priced and not serviceable under either gate", async () => {
    for (const t of [strict, open]) {
      const unknown = (await quote(t, "modality=llm&model=mystery/model-x")).body;
      expect(unknown).toMatchObject({ serviceable: false, priced_by: "none", priced: false, rule: null });
      expect(unknown.catalog).toMatchObject({ found: false, rated: false });
      const unrated = (await quote(t, "modality=tts&model=cartesia/sonic-2")).body;
      expect(unrated).toMatchObject({ serviceable: false, priced_by: "none", priced: false });
      expect(unrated.catalog).toMatchObject({ found: true, rated: false, price_usd: null });
    }
  });

  it("tenant and plan narrow the rule; a tenant key quotes for itself and 404s for another tenant", async () => {
    const acme = (await quote(strict, "modality=tts&model=cartesia/sonic-2&tenant=acme")).body;
    expect(acme).toMatchObject({ serviceable: true, priced_by: "operator", tenant: "acme", rule: "fixed:0.3/1k_char" });
    const own = (await quote(strict, "modality=tts&model=cartesia/sonic-2", ACME)).body;
    expect(own).toMatchObject({ tenant: "acme", rule: "fixed:0.3/1k_char" });
    expect((await quote(strict, "modality=tts&model=cartesia/sonic-2&tenant=globex", ACME)).status).toBe(404);
  });

  it("bad quote queries are 4xx: model without a slash, unknown modality, missing model", async () => {
    for (const q of ["modality=llm&model=gpt-4o", "modality=video&model=openai/gpt-4o", "modality=llm", "model=openai/gpt-4o"]) {
      const { status } = await quote(strict, q);
      expect(status).toBeGreaterThanOrEqual(400);
      expect(status).toBeLessThan(500);
    }
  });

  it(`POST quotes up to ${QUOTE_BATCH_MAX} models in order; one more is a 4xx, not a truncation`, async () => {
    const entry = (i: number) => (i % 2 ? { modality: "llm", model: "openai/gpt-4o" } : { modality: "stt", model: "deepgram/nova-3", tenant: "acme" });
    const ok = await strict.call("POST", "/v1/billing/rate-card/quote", { key: OPS, body: { models: Array.from({ length: QUOTE_BATCH_MAX }, (_, i) => entry(i)) } });
    expect(ok.status).toBe(200);
    const body = (await ok.json()) as { models: Json[] };
    expect(body.models).toHaveLength(QUOTE_BATCH_MAX);
    expect(body.models[0]).toMatchObject({ model: "deepgram/nova-3", serviceable: true, tenant: "acme" });
    expect(body.models[1]).toMatchObject({ model: "openai/gpt-4o", serviceable: false, priced_by: "catalog" });

    const over = await strict.call("POST", "/v1/billing/rate-card/quote", { key: OPS, body: { models: Array.from({ length: QUOTE_BATCH_MAX + 1 }, (_, i) => entry(i)) } });
    expect(over.status).toBe(422);
    expect(((await over.json()) as { error: { message: string } }).error.message).toContain(String(QUOTE_BATCH_MAX));

    const bad = await strict.call("POST", "/v1/billing/rate-card/quote", { key: OPS, body: { models: [{ modality: "llm", model: "noslash" }] } });
    expect(bad.status).toBe(422);
    expect((await strict.call("POST", "/v1/billing/rate-card/quote", { key: OPS, raw: "{", headers: { "content-type": "application/json" } })).status).toBe(400);
  });

  it("GET /v1/billing/rate-card/models lists models seen in telemetry with unit, voice_price_usd and effective", async () => {
    const db = strict.services.database.db;
    const base = { id: "", ts: new Date(), status: "success", pricing: "priced" };
    await seedRequests(db, [
      { ...base, id: randomUUID(), modality: "stt", model_id: "deepgram/nova-3", provider: "deepgram" },
      { ...base, id: randomUUID(), modality: "llm", model_id: "openai/gpt-4o", provider: "openai" },
      { ...base, id: randomUUID(), modality: "llm", model_id: "openai/gpt-4o", provider: "openai" },
      { ...base, id: randomUUID(), modality: "tts", model_id: "cartesia/sonic-2", provider: "cartesia", tenant_id: "acme", pricing: "unrated" },
      { ...base, id: randomUUID(), modality: "llm", model_id: "mystery/model-x", provider: "mystery", pricing: "unknown" },
    ]);
    const res = await strict.call("GET", "/v1/billing/rate-card/models", { key: OPS });
    expect(res.status).toBe(200);
    const models = ((await res.json()) as { models: Json[] }).models;
    const by = (id: string) => models.find((m) => m.model_id === id);
    expect(by("deepgram/nova-3")).toMatchObject({ unit: "minute", voice_price_usd: 0.0077, catalog: "rated" });
    expect(by("deepgram/nova-3")?.effective).toMatchObject({ rule: "cost_plus:1.5" });
    expect(by("openai/gpt-4o")).toMatchObject({ unit: "1m_token", voice_price_usd: 2.5, effective: null, requests: 2 });
    expect(by("cartesia/sonic-2")).toMatchObject({ unit: "1k_char", voice_price_usd: null, catalog: "unrated" });
    expect(by("mystery/model-x")).toMatchObject({ voice_price_usd: null, catalog: "unknown", effective: null });

    const acme = ((await (await strict.call("GET", "/v1/billing/rate-card/models", { key: ACME })).json()) as { models: Json[] }).models;
    expect(acme.map((m) => m.model_id)).toEqual(["cartesia/sonic-2"]);
    expect(acme[0]?.effective).toMatchObject({ rule: "fixed:0.3/1k_char" });
  });
});

describe("GET /v1/billing/rate-card/gaps", () => {
  const t = useTestApp({ yaml: yaml("declared_only") });
  beforeAll(async () => {
    const r = (p: Partial<RequestRow> & { model_id: string }): RequestRow => ({
      id: randomUUID(),
      ts: new Date("2026-10-10T00:00:00Z"),
      modality: "llm",
      provider: p.model_id.split("/")[0] ?? "",
      status: "success",
      pricing: "unknown",
      input_units: 100,
      output_units: 10,
      tenant_id: "acme",
      project: "support",
      ...p,
    });
    await seedRequests(t.services.database.db, [
      r({ model_id: "mystery/a" }),
      r({ model_id: "mystery/a", ts: new Date("2026-10-12T08:00:00Z") }),
      r({ model_id: "mystery/a", tenant_id: "globex" }),
      // not billable: errors, and rows that moved no units
      r({ model_id: "mystery/a", status: "error" }),
      r({ model_id: "mystery/a", input_units: 0, output_units: 0 }),
      r({ model_id: "mystery/a", input_units: null, output_units: null }),
      r({ model_id: "cartesia/sonic-2", modality: "tts", pricing: "unrated", input_units: 5000, output_units: null }),
      r({ model_id: "cartesia/sonic-2", modality: "tts", pricing: "unrated", input_units: 5000, output_units: null, project: "sales" }),
      r({ model_id: "cartesia/sonic-2", modality: "tts", pricing: "unrated", input_units: 1, output_units: null, ts: new Date("2026-09-01T00:00:00Z") }),
      // priced rows are never gaps
      r({ model_id: "openai/gpt-4o", pricing: "priced" }),
    ]);
  });

  const gaps = async (q = "", key = OPS) => {
    const res = await t.call("GET", `/v1/billing/rate-card/gaps?${q}`, { key });
    return { status: res.status, body: (await res.json()) as { gaps: Json[]; caveat_before: string } };
  };

  it("lists unpriceable billable models heaviest first (requests, then units), unknown vs unrated, with the caveat", async () => {
    const { status, body } = await gaps();
    expect(status).toBe(200);
    expect(body.caveat_before).toContain("0.25.6");
    expect(body.gaps).toEqual([
      {
        model_id: "cartesia/sonic-2",
        modality: "tts",
        provider: "cartesia",
        requests: 3,
        input_units: 10001,
        output_units: 0,
        last_seen: "2026-10-10T00:00:00.000Z",
        unknown_requests: 0,
        unrated_requests: 3,
        self_priced_requests: 0,
      },
      {
        model_id: "mystery/a",
        modality: "llm",
        provider: "mystery",
        requests: 3,
        input_units: 300,
        output_units: 30,
        last_seen: "2026-10-12T08:00:00.000Z",
        unknown_requests: 3,
        unrated_requests: 0,
        self_priced_requests: 0,
      },
    ]);
  });

  it("filters by since, project and tenant; a tenant key sees only its own", async () => {
    const since = (await gaps("since=2026-10-01")).body.gaps;
    expect(since.find((g) => g.model_id === "cartesia/sonic-2")?.requests).toBe(2);
    const sales = (await gaps("project=sales")).body.gaps;
    expect(sales.map((g) => g.model_id)).toEqual(["cartesia/sonic-2"]);
    const globex = (await gaps("tenant=globex")).body.gaps;
    expect(globex).toEqual([expect.objectContaining({ model_id: "mystery/a", requests: 1 })]);
    const own = (await gaps("", ACME)).body.gaps;
    expect(own.find((g) => g.model_id === "mystery/a")?.requests).toBe(2);
    expect((await gaps("tenant=globex", ACME)).status).toBe(404);
    expect((await gaps("since=notadate")).status).toBe(422);
  });
});
