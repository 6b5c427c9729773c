import { describe, expect, it } from "vitest";
import { compileCatalog } from "../../src/billing/catalog.js";
import { type CardRule, compileRateCard, type RatingInput, rateRequest, seedRule } from "../../src/billing/rate.js";
import { pricingFormProblems, type RuleDef, toRuleDef } from "../../src/billing/rule-form.js";
import type { RateRuleInput } from "../../src/config/schema.js";

// cartesia/sonic-2 held without a rate: the catalog knows it, it is unrated.
const catalog = compileCatalog({ "cartesia/sonic-2": { price_usd: null } }, ["gpu-box"]);

function rule(r: Partial<RateRuleInput>): CardRule {
  const input = { sets: "price", ...r } as RateRuleInput;
  expect(pricingFormProblems(input)).toEqual([]);
  return seedRule(toRuleDef(input));
}

function rec(r: Partial<RatingInput> & Pick<RatingInput, "modality" | "modelId">): RatingInput {
  return {
    provider: r.modelId.split("/")[0] ?? "",
    tenantId: null,
    plan: null,
    status: "success",
    inputTokens: null,
    outputTokens: null,
    cachedInputTokens: null,
    audioSeconds: null,
    characters: null,
    costUsd: null,
    ...r,
  };
}

const card = (rules: CardRule[], markup = 1.25) => compileRateCard(markup, rules);

describe("rateRequest: pricing forms", () => {
  it("default markup multiplies the given cost (cost_plus token)", () => {
    const r = rateRequest(rec({ modality: "llm", modelId: "openai/gpt-4.1-mini", costUsd: 0.002 }), card([]), catalog);
    expect(r).toEqual({ costUsd: 0.002, ratedPriceUsd: 0.0025, rateRule: "cost_plus:1.25", pricing: "priced" });
  });

  it("a markup rule multiplies the catalog cost when no cost is given", () => {
    // deepgram/nova-3 lists at $0.0077/min; 90 s = 1.5 min = $0.01155; × 1.5 = $0.017325
    const r = rateRequest(rec({ modality: "stt", modelId: "deepgram/nova-3", audioSeconds: 90 }), card([rule({ modality: "stt", markup: 1.5 })]), catalog);
    expect(r).toEqual({ costUsd: 0.01155, ratedPriceUsd: 0.017325, rateRule: "cost_plus:1.5", pricing: "priced" });
  });

  it("fixed per 1k_char prices the characters, independent of cost", () => {
    const c = card([rule({ tenant: "acme", modality: "tts", fixed: 0.3, unit: "1k_char" })]);
    const r = rateRequest(rec({ modality: "tts", modelId: "elevenlabs/eleven_flash_v2_5", tenantId: "acme", characters: 2500 }), c, catalog);
    expect(r).toEqual({ costUsd: 0.125, ratedPriceUsd: 0.75, rateRule: "fixed:0.3/1k_char", pricing: "priced" });
  });

  it("fixed per request charges each non-error request once", () => {
    const c = card([rule({ modality: "llm", fixed: 0.01, unit: "request" })]);
    const ok = rateRequest(rec({ modality: "llm", modelId: "x/y", costUsd: 1 }), c, catalog);
    const err = rateRequest(rec({ modality: "llm", modelId: "x/y", costUsd: 1, status: "error" }), c, catalog);
    expect(ok.ratedPriceUsd).toBe(0.01);
    expect(err.ratedPriceUsd).toBe(0);
    expect(ok.rateRule).toBe("fixed:0.01/request");
  });

  it("token legs: the documented cached example (1M prompt, 800k cached)", () => {
    const c = card([rule({ model: "openai/gpt-4.1-mini", input_price_usd: 0.6, output_price_usd: 2.4, cached_input_price_usd: 0.15, unit: "1m_token" })]);
    const r = rateRequest(rec({ modality: "llm", modelId: "openai/gpt-4.1-mini", inputTokens: 1_000_000, cachedInputTokens: 800_000, outputTokens: 0 }), c, catalog);
    // 200k × $0.6/1M + 800k × $0.15/1M = 0.12 + 0.12
    expect(r.ratedPriceUsd).toBe(0.24);
    expect(r.rateRule).toBe("tokens:0.6/2.4/0.15/1m_token");
    // Cost from the catalog ($0.4 in, $0.1 cached): 200k × 0.4/1M + 800k × 0.1/1M = 0.08 + 0.08
    expect(r.costUsd).toBe(0.16);
  });

  it("cached_input_price_usd defaults to the input rate", () => {
    const c = card([rule({ model: "openai/gpt-4.1-mini", input_price_usd: 0.6, output_price_usd: 2.4, unit: "1m_token" })]);
    const r = rateRequest(rec({ modality: "llm", modelId: "openai/gpt-4.1-mini", inputTokens: 1_000_000, cachedInputTokens: 800_000, outputTokens: 500_000 }), c, catalog);
    expect(r.ratedPriceUsd).toBe(1.8);
    expect(r.rateRule).toBe("tokens:0.6/2.4/0.6/1m_token");
  });

  it("1k_token legs price the same as 1m_token legs scaled by 1000", () => {
    const a = card([rule({ modality: "llm", input_price_usd: 0.6, output_price_usd: 2.4, unit: "1m_token" })]);
    const b = card([rule({ modality: "llm", input_price_usd: 0.0006, output_price_usd: 0.0024, unit: "1k_token" })]);
    const r = rec({ modality: "llm", modelId: "x/y", inputTokens: 12_345, outputTokens: 678 });
    expect(rateRequest(r, a, catalog).ratedPriceUsd).toBe(rateRequest(r, b, catalog).ratedPriceUsd);
  });

  it("a cost rule declares what the operator pays; the default markup prices over it", () => {
    const c = card([rule({ provider: "deepgram", sets: "cost", fixed: 0.0043, unit: "minute" })]);
    const r = rateRequest(rec({ modality: "stt", modelId: "deepgram/nova-3", audioSeconds: 120 }), c, catalog);
    expect(r.costUsd).toBe(0.0086);
    expect(r.ratedPriceUsd).toBe(0.01075);
    expect(r.rateRule).toBe("cost_plus:1.25");
  });

  it("a given cost_usd wins over a cost rule and the catalog", () => {
    const c = card([rule({ provider: "deepgram", sets: "cost", fixed: 0.0043, unit: "minute" })]);
    const r = rateRequest(rec({ modality: "stt", modelId: "deepgram/nova-3", audioSeconds: 120, costUsd: 0.01 }), c, catalog);
    expect(r.costUsd).toBe(0.01);
    expect(r.ratedPriceUsd).toBe(0.0125);
  });

  it("a markup cost rule scales the catalog list price (negotiated discount)", () => {
    const c = card([rule({ provider: "deepgram", sets: "cost", markup: 0.5 })], 2);
    const r = rateRequest(rec({ modality: "stt", modelId: "deepgram/nova-3", audioSeconds: 60 }), c, catalog);
    expect(r.costUsd).toBe(0.00385);
    expect(r.ratedPriceUsd).toBe(0.0077);
  });
});

describe("rateRequest: units convert exactly", () => {
  it("second and minute give the same price", () => {
    const perMin = card([rule({ modality: "stt", fixed: 0.06, unit: "minute" })]);
    const perSec = card([rule({ modality: "stt", fixed: 0.001, unit: "second" })]);
    for (const s of [1, 7, 59.5, 61, 3600, 123_456.789]) {
      const r = rec({ modality: "stt", modelId: "deepgram/nova-3", audioSeconds: s });
      expect(rateRequest(r, perMin, catalog).ratedPriceUsd).toBe(rateRequest(r, perSec, catalog).ratedPriceUsd);
    }
    expect(rateRequest(rec({ modality: "stt", modelId: "deepgram/nova-3", audioSeconds: 30 }), perMin, catalog).ratedPriceUsd).toBe(0.03);
  });

  it("char and 1k_char give the same price", () => {
    const per1k = card([rule({ modality: "tts", fixed: 0.3, unit: "1k_char" })]);
    const perChar = card([rule({ modality: "tts", fixed: 0.0003, unit: "char" })]);
    for (const n of [1, 999, 1000, 1001, 2_500_000]) {
      const r = rec({ modality: "tts", modelId: "cartesia/sonic-2", characters: n });
      expect(rateRequest(r, per1k, catalog).ratedPriceUsd).toBe(rateRequest(r, perChar, catalog).ratedPriceUsd);
    }
  });

  it("a unit that cannot measure the record's modality is skipped, not misapplied", () => {
    // A provider-wide per-minute rule must not price openai's llm records.
    const c = card([rule({ provider: "openai", fixed: 0.01, unit: "minute" })]);
    const llm = rateRequest(rec({ modality: "llm", modelId: "openai/gpt-4o", costUsd: 1 }), c, catalog);
    expect(llm.rateRule).toBe("cost_plus:1.25");
    const stt = rateRequest(rec({ modality: "stt", modelId: "openai/whisper-1", audioSeconds: 60 }), c, catalog);
    expect(stt.rateRule).toBe("fixed:0.01/minute");
  });
});

describe("rateRequest: unknown vs unrated, never a silent zero", () => {
  it("a model the catalog lacks, with no cost, is unknown and unpriced", () => {
    const r = rateRequest(rec({ modality: "llm", modelId: "mystery/model-x", inputTokens: 100 }), card([]), catalog);
    expect(r).toEqual({ costUsd: null, ratedPriceUsd: null, rateRule: null, pricing: "unknown" });
  });

  it("a model the catalog knows without a rate is unrated", () => {
    const r = rateRequest(rec({ modality: "tts", modelId: "cartesia/sonic-2", characters: 100 }), card([]), catalog);
    expect(r).toEqual({ costUsd: null, ratedPriceUsd: null, rateRule: null, pricing: "unrated" });
  });

  it("an operator fixed price prices an unknown model", () => {
    const c = card([rule({ model: "mystery/model-x", fixed: 0.02, unit: "request" })]);
    const r = rateRequest(rec({ modality: "llm", modelId: "mystery/model-x" }), c, catalog);
    expect(r).toEqual({ costUsd: null, ratedPriceUsd: 0.02, rateRule: "fixed:0.02/request", pricing: "priced" });
  });

  it("a catalog entry of another modality does not match", () => {
    const r = rateRequest(rec({ modality: "stt", modelId: "openai/gpt-4o", audioSeconds: 60 }), card([]), catalog);
    expect(r.pricing).toBe("unknown");
  });

  it("self-hosted models are declared at zero cost, found through a self-hosted provider only", () => {
    const local = rateRequest(rec({ modality: "llm", modelId: "gpu-box/llama-3.1-8b", inputTokens: 5000, outputTokens: 100 }), card([]), catalog);
    expect(local).toEqual({ costUsd: 0, ratedPriceUsd: 0, rateRule: "cost_plus:1.25", pricing: "priced" });
    const cloud = rateRequest(rec({ modality: "llm", modelId: "someco/llama-3.1-8b", inputTokens: 5000 }), card([]), catalog);
    expect(cloud.pricing).toBe("unknown");
  });

  it("a pricing.catalog override can add, change and un-rate entries", () => {
    const custom = compileCatalog({
      "someco/llama-3.1-8b": { modality: "llm", input_price_usd: 0.2, output_price_usd: 0.2 },
      "deepgram/nova-3": { price_usd: 0.006 },
      "openai/gpt-4o": { input_price_usd: null },
    });
    expect(rateRequest(rec({ modality: "llm", modelId: "someco/llama-3.1-8b", inputTokens: 1_000_000 }), card([], 1), custom).costUsd).toBe(0.2);
    expect(rateRequest(rec({ modality: "stt", modelId: "deepgram/nova-3", audioSeconds: 60 }), card([], 1), custom).costUsd).toBe(0.006);
    expect(rateRequest(rec({ modality: "llm", modelId: "openai/gpt-4o", inputTokens: 1 }), card([], 1), custom).pricing).toBe("unrated");
  });

  it("a bare { defaultMarkup } card and {} catalog still rate (interface stub compatibility)", () => {
    const r = rateRequest(rec({ modality: "llm", modelId: "a/b", costUsd: 0.1 }), { defaultMarkup: 2 }, {});
    expect(r).toEqual({ costUsd: 0.1, ratedPriceUsd: 0.2, rateRule: "cost_plus:2", pricing: "priced" });
    expect(rateRequest(rec({ modality: "llm", modelId: "a/b" }), { defaultMarkup: 2 }, {}).pricing).toBe("unknown");
  });
});

describe("precedence: the most specific rule wins, every pair", () => {
  const scope = { tenantId: "acme", plan: "pro", modality: "llm" as const, modelId: "openai/gpt-4o", provider: "openai" };
  const levels: [string, Partial<RuleDef>][] = [
    ["tenant", { tenant: "acme" }],
    ["plan", { plan: "pro" }],
    ["model", { model: "openai/gpt-4o" }],
    ["provider", { provider: "openai" }],
    ["modality", { modality: "llm" }],
  ];
  const markupOf = (i: number) => 2 + i; // distinct markups identify the winner

  for (let hi = 0; hi < levels.length; hi++) {
    for (let lo = hi + 1; lo < levels.length; lo++) {
      const [hiName, hiScope] = levels[hi] as [string, Partial<RuleDef>];
      const [loName, loScope] = levels[lo] as [string, Partial<RuleDef>];
      it(`${hiName} beats ${loName}`, () => {
        const rules = [rule({ ...(loScope as object), markup: markupOf(lo) }), rule({ ...(hiScope as object), markup: markupOf(hi) })];
        for (const order of [rules, [...rules].reverse()]) {
          const r = rateRequest(rec({ ...scope, costUsd: 1 }), card(order), catalog);
          expect(r.rateRule).toBe(`cost_plus:${markupOf(hi)}`);
        }
      });
    }
  }

  it("more fields beat fewer at the same top level (tenant+model beats tenant)", () => {
    const r = rateRequest(
      rec({ ...scope, costUsd: 1 }),
      card([rule({ tenant: "acme", markup: 3 }), rule({ tenant: "acme", model: "openai/gpt-4o", markup: 4 })]),
      catalog,
    );
    expect(r.rateRule).toBe("cost_plus:4");
  });

  it("a rule for another tenant, plan, model or provider never matches", () => {
    const rules = [rule({ tenant: "globex", markup: 9 }), rule({ plan: "free", markup: 9 }), rule({ model: "openai/gpt-4.1", markup: 9 }), rule({ provider: "groq", markup: 9 }), rule({ modality: "stt", markup: 9 })];
    expect(rateRequest(rec({ ...scope, costUsd: 1 }), card(rules), catalog).rateRule).toBe("cost_plus:1.25");
  });

  it("a database rule replaces the seed rule of its scope", () => {
    const seed = rule({ modality: "llm", markup: 2 });
    const db: CardRule = { ...rule({ modality: "llm", markup: 3 }), source: "db", ruleId: "rr_x" };
    const c = compileRateCard(1, [seed], [db]);
    expect(c.rules).toHaveLength(1);
    expect(rateRequest(rec({ ...scope, costUsd: 1 }), c, catalog).rateRule).toBe("cost_plus:3");
  });
});

describe("money precision", () => {
  it("an amount the money column cannot hold is left unpriced, never Infinity", () => {
    const c = card([rule({ modality: "tts", fixed: 1_000_000, unit: "char" })]);
    const r = rateRequest(rec({ modality: "tts", modelId: "openai/tts-1", characters: 1e300 }), c, catalog);
    expect(r.ratedPriceUsd).toBeNull();
    expect(r.costUsd).toBeNull();
  });

  it("rounds to 10 decimals with no float drift in a single rating", () => {
    const c = card([rule({ modality: "stt", fixed: 0.0043, unit: "minute" })]);
    const r = rateRequest(rec({ modality: "stt", modelId: "deepgram/nova-3", audioSeconds: 7 }), c, catalog);
    // 0.0043 × 7 / 60 = 0.000501666…
    expect(r.ratedPriceUsd).toBe(0.0005016667);
  });
});
