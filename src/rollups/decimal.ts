/**
 * Exact addition of money values with the schema's 10 decimal places (numeric(20,10)): a batch is
 * summed in memory as scaled BigInts, so the rollup holds exactly what SUM(cost_usd) would.
 */
const SCALE = 10;
const FACTOR = 10n ** BigInt(SCALE);
const PLAIN = /^(-)?(\d+)(?:\.(\d+))?$/;

export function toScaled(value: string | number | null | undefined): bigint {
  if (value === null || value === undefined || value === "") return 0n;
  let text = typeof value === "number" ? value.toFixed(SCALE) : value.trim();
  if (!PLAIN.test(text)) {
    const n = Number(text);
    if (!Number.isFinite(n)) return 0n;
    text = n.toFixed(SCALE);
  }
  const m = PLAIN.exec(text);
  if (!m) return 0n;
  // Round half away from zero at the 10th decimal, as Postgres does when storing numeric(20,10).
  const frac = (m[3] ?? "").padEnd(SCALE + 1, "0");
  let scaled = BigInt(m[2] ?? "0") * FACTOR + BigInt(frac.slice(0, SCALE));
  if (Number(frac[SCALE]) >= 5) scaled += 1n;
  return m[1] ? -scaled : scaled;
}

export function scaledToString(v: bigint): string {
  const neg = v < 0n;
  const abs = neg ? -v : v;
  const whole = abs / FACTOR;
  const frac = (abs % FACTOR).toString().padStart(SCALE, "0");
  return `${neg ? "-" : ""}${whole}.${frac}`;
}
