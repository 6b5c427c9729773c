/**
 * The short text beside a tool's structured result, for a model to quote: the scalar fields at the
 * top level (money and counts, the period), how many entries each list holds. The figures are the
 * structured content's own, never recomputed.
 */
export function summarize(tool: string, result: Record<string, unknown>): string {
  const parts: string[] = [];
  for (const [key, value] of Object.entries(result)) {
    if (parts.length >= 12) break;
    if (value === null || typeof value === "string" || typeof value === "number" || typeof value === "boolean") {
      const text = typeof value === "string" && value.length > 80 ? `${value.slice(0, 77)}...` : String(value);
      parts.push(`${key}=${text}`);
    } else if (Array.isArray(value)) parts.push(`${key}: ${value.length} ${value.length === 1 ? "entry" : "entries"}`);
    else if (typeof value === "object") {
      const inner = Object.entries(value as Record<string, unknown>).filter(([, v]) => typeof v === "number");
      if (inner.length > 0 && inner.length <= 6) parts.push(`${key}: ${inner.map(([k, v]) => `${k}=${v}`).join(", ")}`);
      else parts.push(`${key}: ${Object.keys(value as object).length} keys`);
    }
  }
  return `${tool}: ${parts.join("; ") || "done"}`;
}
