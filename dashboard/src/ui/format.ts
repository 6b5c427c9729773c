/** Money as finance reads it: USD with at least 2 and at most 6 decimals. */
const usd = new Intl.NumberFormat("en-US", { style: "currency", currency: "USD", minimumFractionDigits: 2, maximumFractionDigits: 6 });
const usdShort = new Intl.NumberFormat("en-US", { style: "currency", currency: "USD", minimumFractionDigits: 2, maximumFractionDigits: 2 });
const int = new Intl.NumberFormat("en-US");
const dec = new Intl.NumberFormat("en-US", { maximumFractionDigits: 2 });

export const money = (v: number | null | undefined): string => (v === null || v === undefined ? "—" : usd.format(v));
export const moneyShort = (v: number): string => usdShort.format(v);
export const count = (v: number | null | undefined): string => (v === null || v === undefined ? "—" : int.format(v));
export const num = (v: number | null | undefined): string => (v === null || v === undefined ? "—" : dec.format(v));
export const ms = (v: number | null | undefined): string => (v === null || v === undefined ? "—" : `${dec.format(Math.round(v))} ms`);
export const pct = (v: number | null | undefined): string => (v === null || v === undefined || !Number.isFinite(v) ? "—" : `${dec.format(v)}%`);

const local = new Intl.DateTimeFormat(undefined, { year: "numeric", month: "short", day: "2-digit", hour: "2-digit", minute: "2-digit", second: "2-digit" });

/** A date in the browser's time zone; the UTC form goes in the title (shown on hover). */
export function localDate(value: string | number | Date | null | undefined): { text: string; utc: string } | null {
  if (value === null || value === undefined) return null;
  const d = new Date(value);
  if (Number.isNaN(d.getTime())) return null;
  return { text: local.format(d), utc: `${d.toISOString().replace("T", " ").replace(/\.\d+Z$/, "")} UTC` };
}

export function bytes(v: number | null | undefined): string {
  if (v === null || v === undefined) return "—";
  const units = ["B", "KB", "MB", "GB", "TB"];
  let n = v;
  let i = 0;
  while (n >= 1024 && i < units.length - 1) {
    n /= 1024;
    i++;
  }
  return `${dec.format(n)} ${units[i]}`;
}

export function duration(msValue: number | null | undefined): string {
  if (msValue === null || msValue === undefined) return "—";
  const s = Math.round(msValue / 1000);
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  return m < 60 ? `${m}m ${s % 60}s` : `${Math.floor(m / 60)}h ${m % 60}m`;
}
