import { describe, expect, it } from "vitest";
import { CatalogError, compileCatalog } from "../../src/billing/catalog.js";
import { ConfigError, parseConfigText } from "../../src/config/load.js";

const load = (yaml: string) => parseConfigText(yaml, "voxgate.yaml", {});

describe("rate_card and pricing in voxgate.yaml", () => {
  it("loads the documented seed card", () => {
    const config = load(`
rate_card:
  default_markup: 1.25
  rules:
    - { modality: stt, markup: 1.5 }
    - { tenant: acme, modality: tts, fixed: 0.30, unit: 1k_char }
    - { model: openai/gpt-4.1-mini, input_price_usd: 0.6, output_price_usd: 2.4, unit: 1m_token }
    - { provider: deepgram, sets: cost, fixed: 0.0043, unit: minute }
pricing:
  gate: permissive
  catalog:
    cartesia/sonic-2: { price_usd: 0.038, as_of: "2026-11-01", source: contract }
`);
    expect(config.rate_card.rules).toHaveLength(4);
    expect(config.pricing.gate).toBe("permissive");
  });

  it("refuses a seed rule that breaks the endpoint-16 matrix, naming the rule", () => {
    expect(() => load("rate_card:\n  rules:\n    - { modality: stt, markup: 1.5, fixed: 0.01, unit: minute }\n")).toThrow(ConfigError);
    expect(() => load("rate_card:\n  rules:\n    - { modality: stt, fixed: 0.01 }\n")).toThrow(/rate_card\.rules\.0/);
    expect(() => load("rate_card:\n  rules:\n    - { modality: llm, fixed: 0.01, unit: 1m_token }\n")).toThrow(ConfigError);
  });

  it("refuses two seed rules with the same scope", () => {
    expect(() => load("rate_card:\n  rules:\n    - { modality: stt, markup: 1.5 }\n    - { modality: stt, fixed: 0.01, unit: minute }\n")).toThrow(/one rule per scope/);
  });

  it("refuses bad gates, negative markups and malformed catalog entries", () => {
    expect(() => load("pricing:\n  gate: open\n")).toThrow(ConfigError);
    expect(() => load("rate_card:\n  default_markup: -1\n")).toThrow(ConfigError);
    expect(() => load("pricing:\n  catalog:\n    nomodel: { price_usd: 1 }\n")).toThrow(ConfigError);
    expect(() => load("pricing:\n  catalog:\n    a/b: { price_usd: -1 }\n")).toThrow(ConfigError);
  });

  it("refuses catalog overrides that contradict their modality", () => {
    expect(() => compileCatalog({ "new/model": { price_usd: 1 } })).toThrow(CatalogError);
    expect(() => compileCatalog({ "openai/gpt-4o": { price_usd: 1 } })).toThrow(/llm entries/);
    expect(() => compileCatalog({ "elevenlabs/eleven_flash_v2_5": { input_price_usd: 1 } })).toThrow(/tts entries use price_usd/);
    // Token-billed transcription states token legs beside its per-minute price.
    expect(compileCatalog({ "deepgram/nova-3": { input_price_usd: 1, output_price_usd: 2 } }).entries?.get("deepgram/nova-3")).toMatchObject({ priceUsd: 0.0077, inputPriceUsd: 1 });
    expect(() => compileCatalog({ "deepgram/nova-3": { modality: "tts" } })).toThrow(/contradicts/);
  });
});
