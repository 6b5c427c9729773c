import { sql } from "drizzle-orm";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { formatMoney, formatMoneyShort, moneyNumber, moneyText, parseMoney, roundMoney, sumMoney } from "../src/money.js";
import { AUTH_YAML, OPS, record, rows } from "./ingest/helpers.js";
import { useTestApp } from "./support/app.js";

/** Decimal text with up to 14 decimals (more than money keeps), signed, below numeric(20,10)'s range. */
const decimalText = fc
  .tuple(fc.boolean(), fc.bigInt({ min: 0n, max: 9_999_999_999n }), fc.integer({ min: 0, max: 14 }), fc.bigInt({ min: 0n, max: 10n ** 14n - 1n }))
  .map(([neg, whole, places, frac]) => {
    const f = frac.toString().padStart(14, "0").slice(0, places);
    return `${neg ? "-" : ""}${whole}${f ? `.${f}` : ""}`;
  });

describe("money: the one rounding rule", () => {
  it("rounds half away from zero at the 10th decimal, once", () => {
    expect(formatMoney(parseMoney("0.00000000005"))).toBe("0.0000000001");
    expect(formatMoney(parseMoney("0.00000000004999"))).toBe("0.0000000000");
    expect(formatMoney(parseMoney("-0.00000000005"))).toBe("-0.0000000001");
    expect(formatMoney(parseMoney("12.34567890125"))).toBe("12.3456789013");
    expect(formatMoney(parseMoney("1e-7"))).toBe("0.0000001000");
    expect(formatMoney(parseMoney(".5"))).toBe("0.5000000000");
    expect(parseMoney(null)).toBe(0n);
    expect(parseMoney("not money")).toBe(0n);
    expect(formatMoneyShort(123_456_789_012_345_678n)).toBe("12345678.9012345678");
    expect(formatMoneyShort(-5n)).toBe("-0.0000000005");
    expect(formatMoneyShort(0n)).toBe("0");
    expect(sumMoney(["0.1", "0.2", null, "-0.05"])).toBe("0.25");
    expect(moneyText(0.1 + 0.2)).toBe("0.3000000000");
    expect(moneyText(null)).toBeNull();
    expect(moneyNumber("100.0000000001")).toBe(100.0000000001);
  });

  it("a number rounds like its storage text: roundMoney(n) === Number(moneyText(n))", () => {
    // Near ties too: k·1e-10 plus half a unit, nudged by a few ulps either way.
    const nearTie = fc
      .tuple(fc.integer({ min: 0, max: 2 ** 40 }), fc.integer({ min: -4, max: 4 }))
      .map(([k, ulps]) => (k + 0.5) / 1e10 + ulps * Number.EPSILON * ((k + 0.5) / 1e10));
    fc.assert(
      fc.property(fc.oneof(fc.double({ min: -1e6, max: 1e6, noNaN: true }), nearTie), (n) => {
        expect(roundMoney(n)).toBe(Number(moneyText(n)));
        expect(moneyText(n)).toBe(formatMoney(parseMoney(n)));
      }),
      { numRuns: 20_000 },
    );
  });

  it("storage text parses to its units, by the short path and by the general one alike", () => {
    fc.assert(
      fc.property(fc.bigInt({ min: -(10n ** 20n) + 1n, max: 10n ** 20n - 1n }), (units) => {
        const text = formatMoney(units); // "-12.0000000001": the storage form
        expect(parseMoney(text)).toBe(units);
        // Forms the short path refuses reach the general parse, which agrees.
        expect(parseMoney(` ${text}`)).toBe(units);
        expect(parseMoney(`${text}0`)).toBe(units);
        expect(parseMoney(`${text}9`)).toBe(units < 0n ? units - 1n : units + 1n); // 11 decimals: rounded away from zero
      }),
      { numRuns: 5_000 },
    );
    const odd: [string, bigint][] = [["-.0000000001", -1n], ["+1.0000000000", 10_000_000_000n], ["1.0000000000 ", 10_000_000_000n], ["1,0000000000", 0n], ["1.000000000x", 0n], ["--1.0000000000", 0n]];
    for (const [text, units] of odd) expect(parseMoney(text), text).toBe(units);
  });

  describe("against Postgres", () => {
    const t = useTestApp({ yaml: AUTH_YAML });

    it("rounds exactly as Postgres stores numeric(20,10)", async () => {
      const texts = fc.sample(decimalText, { numRuns: 300, seed: 42 });
      const stored = await rows<{ v: string }>(
        t.services.database.db,
        sql`SELECT v::numeric(20,10)::text AS v FROM jsonb_array_elements_text(${JSON.stringify(texts)}::jsonb) WITH ORDINALITY AS x(v, i) ORDER BY i`,
      );
      expect(stored.map((r) => r.v)).toEqual(texts.map((s) => formatMoney(parseMoney(s))));
    });

    it("store → sum in SQL → report equals the exact sum of the amounts, each rounded once", async () => {
      let run = 0;
      await fc.assert(
        fc.asyncProperty(fc.array(fc.double({ min: 0, max: 1000, noNaN: true }), { minLength: 1, maxLength: 40 }), async (amounts) => {
          const project = `money-${run++}`;
          const body = amounts.map((cost_usd) => record({ cost_usd, project }));
          expect((await t.call("POST", "/v1/ingest", { key: OPS, body })).status).toBe(200);
          const exact = sumMoney(amounts.map((a) => moneyText(a)));
          const costs = (await (await t.call("GET", `/v1/costs?period=today&project=${project}`, { key: OPS })).json()) as { total: number };
          expect(costs.total).toBe(moneyNumber(exact));
          const [raw] = await rows<{ s: string }>(t.services.database.db, sql`SELECT sum(cost_usd)::text AS s FROM requests WHERE project = ${project}`);
          expect(parseMoney(raw?.s)).toBe(parseMoney(exact));
        }),
        { numRuns: 15, seed: 7 },
      );
    });
  });
});
