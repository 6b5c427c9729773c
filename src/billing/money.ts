/**
 * Exact decimal money outside the database: amounts as BigInt counts of 1e-10 USD (the scale of the
 * numeric(20,10) money columns). Used to add a handful of database sums, or many re-ratings, without
 * float drift.
 */
const SCALE = 10_000_000_000n;

/** "12.5", "-0.0000000005", or a JS number (rounded to 10 decimals) → 1e-10 USD units. */
export function toMoneyUnits(v: string | number | null): bigint {
  if (v === null) return 0n;
  const s = typeof v === "number" ? v.toFixed(10) : v.trim();
  const neg = s.startsWith("-");
  const [i = "0", f = ""] = (neg ? s.slice(1) : s).split(".");
  const units = BigInt(i || "0") * SCALE + BigInt(f.padEnd(10, "0").slice(0, 10) || "0");
  return neg ? -units : units;
}

/** 1e-10 USD units → the shortest exact decimal string. */
export function formatMoneyUnits(u: bigint): string {
  const neg = u < 0n;
  const a = neg ? -u : u;
  const frac = (a % SCALE).toString().padStart(10, "0").replace(/0+$/, "");
  return `${neg ? "-" : ""}${a / SCALE}${frac ? `.${frac}` : ""}`;
}

/** Exact sum of decimal strings. */
export function sumMoney(values: Iterable<string>): string {
  let acc = 0n;
  for (const v of values) acc += toMoneyUnits(v);
  return formatMoneyUnits(acc);
}
