import { describe, expect, it, vi } from "vitest";
import { RateCardStore } from "../../src/billing/rate-card-store.js";
import { auditLog, rateRules } from "../../src/db/schema/index.js";
import { useTestApp } from "../support/app.js";
import { authYaml, KEYS, RULES } from "../support/fixtures.js";

const ADMIN = KEYS.ops;
const READER = KEYS.reader;
const ACME_WRITER = KEYS.acmeWriter;

const yaml = `
${authYaml("ops", "reader", "acmeWriter")}rate_card:
  default_markup: 1.25
  rules:
    - { modality: stt, markup: 1.5 }
    - ${RULES.acmeTts}
    - ${RULES.gptMiniTokens}
    - ${RULES.deepgramCost}
`;

type Json = Record<string, unknown>;

describe("rate-card rules", () => {
  const t = useTestApp({ yaml });

  const post = (body: unknown, key = ADMIN) => t.call("POST", "/v1/billing/rate-card/rules", { key, body });
  const ruleCount = async () => (await t.services.database.db.select().from(rateRules)).length;

  it("GET /v1/billing/rate-card shows the seed with audit tokens and the default markup", async () => {
    const res = await t.call("GET", "/v1/billing/rate-card", { key: READER });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { default_markup: number; rules: Json[] };
    expect(body.default_markup).toBe(1.25);
    expect(body.rules.map((r) => r.rule).sort()).toEqual(
      ["cost_plus:1.5", "fixed:0.0043/minute", "fixed:0.3/1k_char", "tokens:0.6/2.4/0.6/1m_token"].sort(),
    );
    for (const r of body.rules) {
      expect(r.source).toBe("seed");
      expect("rule_id" in r).toBe(false);
    }
    // Most specific first: the tenant rule leads.
    expect(body.rules[0]?.tenant).toBe("acme");
  });

  it("upserts one rule per scope: 200 both times with the same rule_id, effective at once", async () => {
    const first = await post({ modality: "llm", markup: 1.4 });
    expect(first.status).toBe(200);
    const a = (await first.json()) as Json;
    expect(a.rule_id).toMatch(/^rr_/);
    expect(a.rule).toBe("cost_plus:1.4");
    expect(a.sets).toBe("price");

    const second = await post({ modality: "llm", markup: 1.6 });
    expect(second.status).toBe(200);
    const b = (await second.json()) as Json;
    expect(b.rule_id).toBe(a.rule_id);
    expect(b.rule).toBe("cost_plus:1.6");

    const list = (await (await t.call("GET", "/v1/billing/rate-card/rules", { key: READER })).json()) as { rules: Json[] };
    expect(list.rules.filter((r) => r.scope_key === "||llm||")).toHaveLength(1);

    // The refresh the call triggers makes it effective for the next rating.
    const { card, catalog } = t.services.rateCard.snapshot();
    const { rateRequest } = await import("../../src/billing/rate.js");
    const r = rateRequest(
      {
        modality: "llm",
        modelId: "openai/gpt-4o",
        provider: "openai",
        tenantId: null,
        status: "success",
        inputTokens: null,
        outputTokens: null,
        cachedInputTokens: null,
        audioSeconds: null,
        characters: null,
        costUsd: 1,
      },
      card,
      catalog,
    );
    expect(r.rateRule).toBe("cost_plus:1.6");
  });

  it("a database rule overrides the seed rule of its scope in the merged card", async () => {
    const res = await post({ modality: "stt", markup: 1.75 });
    expect(res.status).toBe(200);
    const card = (await (await t.call("GET", "/v1/billing/rate-card", { key: READER })).json()) as { rules: Json[] };
    const stt = card.rules.filter((r) => r.scope_key === "||stt||");
    expect(stt).toHaveLength(1);
    expect(stt[0]?.source).toBe("db");
    expect(stt[0]?.rule).toBe("cost_plus:1.75");
  });

  it("stores token legs with cached defaulting to the input rate, and fixed per unit", async () => {
    const legs = (await (await post({ model: "openai/gpt-4o", input_price_usd: 3, output_price_usd: 12, unit: "1m_token" })).json()) as Json;
    expect(legs.rule).toBe("tokens:3/12/3/1m_token");
    expect(legs.cached_input_price_usd).toBe(3);
    const fixed = (await (await post({ tenant: "globex", modality: "stt", fixed: 0.02, unit: "minute" })).json()) as Json;
    expect(fixed.rule).toBe("fixed:0.02/minute");
    const cost = (await (await post({ model: "cartesia/sonic-2", sets: "cost", fixed: 0.00004, unit: "char" })).json()) as Json;
    expect(cost.sets).toBe("cost");
    expect(cost.rule).toBe("fixed:0.00004/char");
  });

  it("records upserts and deletes in the audit log (entity rate_rule)", async () => {
    const created = (await (await post({ provider: "groq", markup: 1.1 })).json()) as Json;
    const del = await t.call("DELETE", `/v1/billing/rate-card/rules/${created.rule_id}`, { key: ADMIN });
    expect(del.status).toBe(200);
    expect(((await del.json()) as Json).deleted).toBe(true);
    const rows = (await t.services.database.db.select().from(auditLog)).filter((r) => r.entityId === created.rule_id);
    expect(rows.map((r) => [r.entityType, r.action])).toEqual([
      ["rate_rule", "create"],
      ["rate_rule", "delete"],
    ]);
  });

  it("another replica (its own store over the same database) picks a change up at its periodic refresh", async () => {
    const replica = new RateCardStore(t.services.database.db, t.services.config);
    await replica.refresh();
    const worker = replica.startRefresher(() => {}, 25);
    try {
      const created = (await (await post({ provider: "cartesia", markup: 1.9 })).json()) as Json;
      await vi.waitFor(() => expect(replica.snapshot().card.rules?.some((r) => r.ruleId === created.rule_id)).toBe(true), { timeout: 10_000 });
    } finally {
      await worker.stop();
    }
  });

  it("DELETE of an unknown rule id is 404 in the envelope", async () => {
    const res = await t.call("DELETE", "/v1/billing/rate-card/rules/rr_doesnotexist", { key: ADMIN });
    expect(res.status).toBe(404);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe("not_found");
  });

  it("a deleted rule stops applying after the refresh the call triggers", async () => {
    const created = (await (await post({ provider: "anthropic", markup: 3 })).json()) as Json;
    const quote = async () =>
      ((await (await t.call("GET", "/v1/billing/rate-card/quote?modality=llm&model=anthropic/claude-sonnet-4-5", { key: READER })).json()) as Json)
        .effective as Json | null;
    expect((await quote())?.rule).toBe("cost_plus:3");
    await t.call("DELETE", `/v1/billing/rate-card/rules/${created.rule_id}`, { key: ADMIN });
    // The llm-wide rule set earlier applies again.
    expect((await quote())?.rule).toBe("cost_plus:1.6");
  });

  it("needs write scope to change rules: 401 anonymous, 403 read-only", async () => {
    expect((await t.call("POST", "/v1/billing/rate-card/rules", { body: { markup: 2 } })).status).toBe(401);
    expect((await post({ markup: 2 }, READER)).status).toBe(403);
    expect((await t.call("DELETE", "/v1/billing/rate-card/rules/rr_x", { key: READER })).status).toBe(403);
  });

  it("a tenant-scoped key cannot change rules (even its own tenant's) and sees only general and own rules", async () => {
    const before = await ruleCount();
    expect((await post({ modality: "llm", markup: 0.5 }, ACME_WRITER)).status).toBe(403);
    expect((await post({ tenant: "acme", markup: 0 }, ACME_WRITER)).status).toBe(403);
    const rules = ((await (await t.call("GET", "/v1/billing/rate-card/rules", { key: ADMIN })).json()) as { rules: Json[] }).rules;
    expect((await t.call("DELETE", `/v1/billing/rate-card/rules/${rules[0]?.rule_id}`, { key: ACME_WRITER })).status).toBe(403);
    expect(await ruleCount()).toBe(before);

    const own = ((await (await t.call("GET", "/v1/billing/rate-card/rules", { key: ACME_WRITER })).json()) as { rules: Json[] }).rules;
    expect(own.length).toBeGreaterThan(0);
    expect(own.every((r) => r.tenant === null || r.tenant === "acme")).toBe(true);
    expect(rules.some((r) => r.tenant === "globex")).toBe(true);
    const card = ((await (await t.call("GET", "/v1/billing/rate-card", { key: ACME_WRITER })).json()) as { rules: Json[] }).rules;
    expect(card.some((r) => r.tenant === "acme")).toBe(true);
    expect(card.some((r) => r.tenant === "globex")).toBe(false);
  });

  describe("POST /v1/billing/rate-card/rules' 400 matrix: each case, nothing stored", () => {
    const cases: [string, unknown][] = [
      ["both markup and a fixed price", { modality: "stt", markup: 1.2, fixed: 0.01, unit: "minute" }],
      ["unit missing for fixed", { modality: "stt", fixed: 0.01 }],
      ["unit invalid", { modality: "stt", fixed: 0.01, unit: "hour" }],
      ["a bare fixed on a token unit", { modality: "llm", fixed: 0.5, unit: "1m_token" }],
      ["a token unit lacking the output leg", { modality: "llm", input_price_usd: 0.5, unit: "1m_token" }],
      ["a token unit lacking the input leg", { modality: "llm", output_price_usd: 0.5, unit: "1m_token" }],
      ["leg prices on a non-token unit", { modality: "llm", input_price_usd: 0.5, output_price_usd: 1, unit: "minute" }],
      ["modality contradicting the unit (stt per char)", { modality: "stt", fixed: 0.01, unit: "char" }],
      ["modality contradicting the unit (tts per 1m_token)", { modality: "tts", input_price_usd: 1, output_price_usd: 1, unit: "1m_token" }],
      ["no pricing form at all", { modality: "stt" }],
      ["markup together with token legs", { markup: 1.2, input_price_usd: 1, output_price_usd: 1, unit: "1m_token" }],
      ["markup with a unit", { markup: 1.2, unit: "minute" }],
      ["token legs without a unit", { input_price_usd: 1, output_price_usd: 1 }],
      ["a negative price", { modality: "stt", fixed: -0.01, unit: "minute" }],
      ["a negative markup", { markup: -1 }],
      ["an absurd price (1e308)", { modality: "stt", fixed: 1e308, unit: "minute" }],
      ["a price below money precision", { modality: "stt", fixed: 1e-12, unit: "minute" }],
      ["a price that is a string", { modality: "stt", fixed: "0.01", unit: "minute" }],
      ["an unknown sets value", { markup: 1.2, sets: "revenue" }],
      ["an unknown field", { markup: 1.2, discount: 0.1 }],
      ["an unknown modality", { modality: "video", markup: 1.2 }],
      ["a model id without a slash", { model: "gpt-4o", markup: 1.2 }],
      ["a model not of the given provider", { provider: "groq", model: "openai/gpt-4o", markup: 1.2 }],
      ["SQL metacharacters in tenant", { tenant: "acme'; DROP TABLE rate_rules; --", markup: 1.2 }],
      ["the scope separator in plan", { plan: "pro|x", markup: 1.2 }],
      ["an empty provider", { provider: "", markup: 1.2 }],
      ["a body that is an array", [{ markup: 1.2 }]],
    ];
    for (const [name, body] of cases) {
      it(`400: ${name}`, async () => {
        const before = await ruleCount();
        const res = await post(body);
        expect(res.status).toBe(400);
        const err = ((await res.json()) as { error: { code: string; message: string } }).error;
        expect(err.code).toBe("invalid_rate_rule");
        expect(err.message.length).toBeGreaterThan(10);
        expect(await ruleCount()).toBe(before);
      });
    }

    it("400: malformed JSON and NaN/Infinity literals (not JSON)", async () => {
      for (const raw of ['{"markup": NaN}', '{"markup": Infinity}', "{markup:"]) {
        const res = await t.call("POST", "/v1/billing/rate-card/rules", { key: ADMIN, raw, headers: { "content-type": "application/json" } });
        expect(res.status).toBe(400);
      }
    });
  });
});
