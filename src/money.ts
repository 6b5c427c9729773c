/**
 * Money, in one place. Every USD amount Voxgate stores is numeric(20,10): 10 decimal places, at most
 * 10 integer digits. The one rounding rule, used everywhere a value gains or loses digits:
 *
 *   round half away from zero at the 10th decimal, applied to the value's exact decimal expansion
 *   (for a JS number: its exact binary value, which is what `Number.prototype.toFixed` rounds).
 *
 * It is the rule Postgres applies when it stores a numeric(20,10), so a value rounded here and the
 * same value rounded by the database agree. Sums are exact: in SQL (numeric) or here as BigInt
 * counts of 1e-10 USD ("units"); an amount is rounded once, when it is first made (rating), never
 * again on its way to a report. Leaf module: it imports nothing.
 */

export const MONEY_DECIMALS = 10;
/** numeric(20,10) holds up to 10 integer digits: a larger amount is out of range, never stored. */
export const MAX_MONEY_USD = 1e10;

const FACTOR = 10n ** BigInt(MONEY_DECIMALS);
const PLAIN = /^(-)?(\d*)(?:\.(\d*))?$/;

/** An amount rounded by the rule, as a number (rating's output). Non-finite stays as it is. */
export function roundMoney(n: number): number {
  // Fast path for rating's hot loop. Below 1e4 the product n·1e10 is off by < 0.011, so away from a
  // tie Math.round gives the rounded integer k; k / 1e10 is then the number nearest k·1e-10, exactly
  // what toFixed's text parses back to. Near a tie (or out of range) toFixed decides.
  if (n >= 0 && n < 1e4) {
    const scaled = n * 1e10;
    if (Math.abs(scaled - Math.floor(scaled) - 0.5) > 0.02) return Math.round(scaled) / 1e10 + 0; // + 0: never -0
  }
  return Number.isFinite(n) ? Number(n.toFixed(MONEY_DECIMALS)) + 0 : n;
}

/**
 * Decimal text ("12.5", "-0.00000000005", "1e-7") or a number → exact 1e-10 USD units, rounded by the
 * rule when the input has more than 10 decimals. Null, undefined, "" and non-numeric text are 0.
 */
export function parseMoney(value: string | number | null | undefined): bigint {
  if (value === null || value === undefined) return 0n;
  if (typeof value === "string") {
    const units = storageTextUnits(value);
    if (units !== null) return units;
  }
  let text = typeof value === "number" ? (Number.isFinite(value) ? value.toFixed(MONEY_DECIMALS) : "") : value.trim();
  if (text !== "" && !PLAIN.test(text)) {
    // Exponent notation (a driver or a caller may hand one over): through the number's exact value.
    const n = Number(text);
    text = Number.isFinite(n) ? n.toFixed(MONEY_DECIMALS) : "";
  }
  const m = PLAIN.exec(text);
  if (!m || (m[2] === "" && (m[3] ?? "") === "")) return 0n;
  const digits = (m[3] ?? "").padEnd(MONEY_DECIMALS + 1, "0");
  let units = BigInt(m[2] || "0") * FACTOR + BigInt(digits.slice(0, MONEY_DECIMALS));
  if (digits.charCodeAt(MONEY_DECIMALS) >= 53 /* '5' */) units += 1n; // half away from zero
  return m[1] ? -units : units;
}

/**
 * Storage text ("-12.0000120000": digits, a point, exactly 10 decimals; what moneyText and Postgres
 * write) → units with one BigInt parse of the digits; null for any other form. Rollups sum every
 * stored row's money: the general parse (a regex, padding, two BigInts) was ~4 % of ingest's CPU.
 */
function storageTextUnits(text: string): bigint | null {
  const known = parsedTexts.get(text);
  if (known !== undefined) return known;
  const units = parseStorageText(text);
  if (units !== null) {
    if (parsedTexts.size >= PARSED_TEXTS_MAX) parsedTexts.clear();
    parsedTexts.set(text, units);
  }
  return units;
}

/**
 * Storage texts parsed lately. Ingest's projections (sessions aside) each sum a batch's two money
 * columns, so every text was parsed three times, and a batch repeats prices: 4,096 texts hold a
 * 1,000-row batch's, and the table starts over when full (~0.35 of a 500-row batch's 1.5 ms of
 * fold rows went to these parses, docs/perf/ingest.md).
 */
const parsedTexts = new Map<string, bigint>();
const PARSED_TEXTS_MAX = 4096;

function parseStorageText(text: string): bigint | null {
  const point = text.length - MONEY_DECIMALS - 1;
  if (point < 1 || point > 12 || text.charCodeAt(point) !== 46 /* '.' */) return null;
  for (let i = text.charCodeAt(0) === 45 /* '-' */ && point > 1 ? 1 : 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if ((c < 48 || c > 57) && i !== point) return null;
  }
  return BigInt(text.slice(0, point) + text.slice(point + 1));
}

/** Units → storage text with exactly 10 decimals ("0.1200000000"), never exponent notation. */
export function formatMoney(units: bigint): string {
  const neg = units < 0n;
  const abs = neg ? -units : units;
  return `${neg ? "-" : ""}${abs / FACTOR}.${(abs % FACTOR).toString().padStart(MONEY_DECIMALS, "0")}`;
}

/** Units → the shortest exact decimal text ("0.12"): money sent as a string in JSON. */
export function formatMoneyShort(units: bigint): string {
  const neg = units < 0n;
  const abs = neg ? -units : units;
  const frac = (abs % FACTOR).toString().padStart(MONEY_DECIMALS, "0").replace(/0+$/, "");
  return `${neg ? "-" : ""}${abs / FACTOR}${frac ? `.${frac}` : ""}`;
}

/** A number about to be written to a numeric(20,10) column: its storage text (null stays null). */
export function moneyText(value: number | null | undefined): string | null {
  if (value === null || value === undefined || !Number.isFinite(value)) return null;
  // toFixed applies the rule to the exact value and never uses exponent notation below 1e21
  // (ingest's hot path: no BigInt round trip); only a rounded-away negative needs its sign dropped.
  const text = value.toFixed(MONEY_DECIMALS);
  return text === "-0.0000000000" ? "0.0000000000" : text;
}

/** Money at the JSON edge: a stored or summed numeric (text) → the nearest number (null → 0). */
export function moneyNumber(value: string | number | null | undefined): number {
  return Number(formatMoney(parseMoney(value)));
}

/** Exact sum of amounts, as units. */
export function sumMoneyUnits(values: Iterable<string | number | null | undefined>): bigint {
  let acc = 0n;
  for (const v of values) acc += parseMoney(v);
  return acc;
}

/** Exact sum of amounts, as the shortest decimal text. */
export function sumMoney(values: Iterable<string | number | null | undefined>): string {
  return formatMoneyShort(sumMoneyUnits(values));
}
