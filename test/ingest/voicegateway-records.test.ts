import { sql } from "drizzle-orm";
import { randomUUID } from "node:crypto";
import { describe, expect, it } from "vitest";
import { useTestApp } from "../support/app.js";
import { OPS, rows } from "./helpers.js";

/** Voicegateway agents push their records unchanged, cached tokens included. */
const yaml = `
auth:
  api_keys:
    - ${OPS}
rate_card:
  rules:
    - { model: openai/gpt-4.1-mini, input_price_usd: 0.6, output_price_usd: 2.4, cached_input_price_usd: 0.15, unit: 1m_token }
`;

interface Row {
  id: string;
  cached_input_tokens: number | null;
  rated_price_usd: string;
  rate_rule: string;
  metadata: Record<string, unknown> | null;
}

describe("voicegateway request records", () => {
  const t = useTestApp({ yaml });

  const ingest = async (records: Record<string, unknown>[]) => {
    const res = await t.call("POST", "/v1/ingest", { key: OPS, body: records });
    expect(res.status).toBe(200);
    return (await res.json()) as { accepted: number; skipped: number };
  };
  const row = async (id: string) =>
    (await rows<Row>(t.services.database.db, sql`SELECT id, cached_input_tokens::int AS cached_input_tokens, rated_price_usd::text, rate_rule, metadata FROM requests WHERE id = ${id}`))[0];

  const base = () => ({
    id: randomUUID(),
    timestamp: new Date().toISOString(),
    modality: "llm",
    model_id: "openai/gpt-4.1-mini",
    input_tokens: 1_000_000,
    output_tokens: 0,
  });

  it("rates cached_input_units at the cached price, and rate_rule says which price", async () => {
    const units = { ...base(), cached_input_units: 800_000, revision: "r7", turn_index: 3, pricing_source: "catalog" };
    const plain = base();
    expect(await ingest([units, plain])).toMatchObject({ accepted: 2, skipped: 0 });
    const cached = await row(units.id);
    expect(cached?.cached_input_tokens).toBe(800_000);
    // 200k uncached × $0.6/1M + 800k cached × $0.15/1M = 0.12 + 0.12
    expect(Number(cached?.rated_price_usd)).toBeCloseTo(0.24, 10);
    expect(cached?.rate_rule).toBe("tokens:0.6/2.4/0.15/1m_token");
    expect(Number((await row(plain.id))?.rated_price_usd)).toBeCloseTo(0.6, 10);
  });

  it("lets cached_input_tokens win over cached_input_units", async () => {
    const both = { ...base(), cached_input_tokens: 400_000, cached_input_units: 800_000 };
    await ingest([both]);
    const r = await row(both.id);
    expect(r?.cached_input_tokens).toBe(400_000);
    expect(Number(r?.rated_price_usd)).toBeCloseTo(0.6 * 0.6 + 0.4 * 0.15, 10);
  });

  it("keeps revision, turn_index and pricing_source in metadata (the record's fields win)", async () => {
    const rec = { ...base(), revision: 12, turn_index: 0, pricing_source: "agent", metadata: { note: "n", turn_index: 99 } };
    await ingest([rec]);
    expect((await row(rec.id))?.metadata).toEqual({ note: "n", revision: 12, turn_index: 0, pricing_source: "agent" });
    const none = base();
    await ingest([none]);
    expect((await row(none.id))?.metadata).toBeNull();
  });

  it("skips a record whose voicegateway fields are malformed, naming the field", async () => {
    const res = await t.call("POST", "/v1/ingest", { key: OPS, body: [{ ...base(), turn_index: -1 }, { ...base(), cached_input_units: "3" }] });
    const body = (await res.json()) as { skipped: number; skipped_records: { reason: string }[] };
    expect(body.skipped).toBe(2);
    expect(body.skipped_records.map((s) => s.reason.split(":")[0])).toEqual(["turn_index", "cached_input_units"]);
  });
});
