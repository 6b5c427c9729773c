/** A value as a table cell: numbers as they are, null as "-", lists joined. */
function cell(v: unknown): string {
  if (v === null || v === undefined) return "-";
  if (Array.isArray(v)) return v.join(",");
  if (typeof v === "object") return JSON.stringify(v);
  return String(v);
}

/** Rows as an aligned text table under a header (what the remote commands print on a terminal). */
export function table(rows: readonly Record<string, unknown>[], columns: readonly string[]): string {
  if (rows.length === 0) return "(none)\n";
  const cells = rows.map((r) => columns.map((c) => cell(r[c])));
  const widths = columns.map((c, i) => Math.max(c.length, ...cells.map((row) => row[i]?.length ?? 0)));
  const line = (values: readonly string[]) => `${values.map((v, i) => v.padEnd(widths[i] ?? 0)).join("  ").trimEnd()}\n`;
  return line(columns) + cells.map(line).join("");
}

/** A record as `key: value` lines. */
export function keyValues(record: Record<string, unknown>): string {
  const width = Math.max(...Object.keys(record).map((k) => k.length));
  return Object.entries(record)
    .map(([k, v]) => `${k.padEnd(width)}  ${cell(v)}\n`)
    .join("");
}

/** `{name: {cost, requests}}` as table rows with the name first. */
export function namedRows(lines: Record<string, Record<string, unknown>>, name: string): Record<string, unknown>[] {
  return Object.entries(lines).map(([k, v]) => ({ [name]: k, ...v }));
}
