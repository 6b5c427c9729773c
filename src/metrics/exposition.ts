/**
 * Prometheus text exposition (format 0.0.4), written by hand: prom-client cannot publish a summary
 * without _sum/_count children, and docs/api/reports.md promises none. One family = HELP, TYPE, then samples.
 */

export type MetricType = "gauge" | "counter" | "summary";

export interface MetricSample {
  labels?: Record<string, string>;
  value: number;
}

export interface MetricFamily {
  name: string;
  help: string;
  type: MetricType;
  samples: MetricSample[];
}

const METRIC_NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;

/**
 * Control characters other than line feed (C0, DEL, C1) and the Unicode line/paragraph separators.
 * The text format escapes only backslash, double quote and line feed, so a carriage return in a
 * project name passes promtool yet splits the line for line-based consumers (log shippers, CRLF-aware
 * parsers): in label values each becomes U+FFFD.
 */
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point
const CONTROL = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u2028\u2029]/g;

/** Label values escape backslash, double quote and newline; other control characters become U+FFFD. */
export function escapeLabelValue(v: string): string {
  return v.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n").replace(CONTROL, "\ufffd");
}

/** HELP text escapes backslash and newline. */
export function escapeHelp(v: string): string {
  return v.replace(/\\/g, "\\\\").replace(/\n/g, "\\n");
}

export function formatValue(v: number): string {
  if (Number.isNaN(v)) return "NaN";
  if (v === Number.POSITIVE_INFINITY) return "+Inf";
  if (v === Number.NEGATIVE_INFINITY) return "-Inf";
  return String(v);
}

function formatLabels(labels: Record<string, string> | undefined): string {
  const entries = Object.entries(labels ?? {});
  if (entries.length === 0) return "";
  for (const [k] of entries) if (!LABEL_NAME.test(k) || k.startsWith("__")) throw new Error(`invalid label name ${k}`);
  return `{${entries.map(([k, v]) => `${k}="${escapeLabelValue(v)}"`).join(",")}}`;
}

/** Renders families in order; a family without samples is left out (unknown values are absent). */
export function renderExposition(families: MetricFamily[]): string {
  const lines: string[] = [];
  for (const f of families) {
    if (f.samples.length === 0) continue;
    if (!METRIC_NAME.test(f.name)) throw new Error(`invalid metric name ${f.name}`);
    lines.push(`# HELP ${f.name} ${escapeHelp(f.help)}`, `# TYPE ${f.name} ${f.type}`);
    for (const s of f.samples) lines.push(`${f.name}${formatLabels(s.labels)} ${formatValue(s.value)}`);
  }
  return lines.length === 0 ? "" : `${lines.join("\n")}\n`;
}
