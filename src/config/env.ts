import { z } from "zod";

/**
 * The process environment, parsed once: the one module of the server that reads process.env
 * (`callObservationsDisabled` reads it per request, as docs/api/calls.md says). The library
 * entry points (voxgate/client, voxgate/livekit) run in the user's agent and read their own defaults.
 */
const envSchema = z.object({
  VOXGATE_CONFIG: z.string().min(1).optional(),
  VOXGATE_DB_PATH: z.string().min(1).optional(),
  /** The operator's static key, scope `*`. */
  VOXGATE_API_KEY: z.string().min(1).optional(),
  /** One or more comma-separated static keys with the ingest scope only: what agents are given. */
  VOXGATE_INGEST_KEY: z.string().min(1).optional(),
  VOXGATE_SECRET: z.string().min(1).optional(),
  /** Comma-separated earlier secrets, still accepted for decryption while keys are re-encrypted. */
  VOXGATE_SECRET_PREVIOUS: z.string().min(1).optional(),
  VOXGATE_COLLECTOR_URL: z.string().min(1).optional(),
  /** A sidecar's id on the collector's roster (the client's default: `<hostname>:<pid>`). */
  VOXGATE_AGENT_ID: z.string().min(1).optional(),
  /** The Voxgate server the remote commands (`voxgate mcp`, `status`, `costs`, …) talk to. */
  VOXGATE_URL: z.string().min(1).optional(),
  VOXGATE_LOADTEST_TRUNK_IDS: z.string().optional(),
  VOXGATE_NODE_SCRAPE_TARGETS: z.string().optional(),
  DATABASE_URL: z.string().min(1).optional(),
  /** A read replica of DATABASE_URL's database: the read routes (/v1/costs, /v1/latency, /v1/logs, /v1/metrics) query it when set. */
  DATABASE_READ_URL: z.string().min(1).optional(),
  LIVEKIT_API_KEY: z.string().min(1).optional(),
  LIVEKIT_API_SECRET: z.string().min(1).optional(),
  LOG_LEVEL: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).optional(),
  HOME: z.string().optional(),
  /**
   * The standard OpenTelemetry exporter variables: when an endpoint is set, each gateway call is
   * exported as a GenAI client span (src/gateway/span-sink.ts); unset, nothing of OTel is loaded.
   */
  OTEL_EXPORTER_OTLP_ENDPOINT: z.string().url().optional(),
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: z.string().url().optional(),
  OTEL_EXPORTER_OTLP_HEADERS: z.string().optional(),
  OTEL_EXPORTER_OTLP_TRACES_HEADERS: z.string().optional(),
  OTEL_SERVICE_NAME: z.string().min(1).optional(),
  OTEL_SDK_DISABLED: z.string().optional(),
});

export type Env = z.infer<typeof envSchema>;

/** The raw process environment, for the few readers that take variables by name (config interpolation). */
export function processEnv(): NodeJS.ProcessEnv {
  return process.env;
}

export function parseEnv(source: NodeJS.ProcessEnv = process.env): Env {
  // Empty strings mean "unset" for every variable (docker-compose passes `VAR=` through).
  const cleaned = Object.fromEntries(Object.entries(source).filter(([, v]) => v !== undefined && v !== ""));
  return envSchema.parse(cleaned);
}

/** VOXGATE_DISABLE_CALL_OBSERVATIONS: any value other than 0/false/no/off disables; read per request. */
export function callObservationsDisabled(source: NodeJS.ProcessEnv = process.env): boolean {
  const raw = source.VOXGATE_DISABLE_CALL_OBSERVATIONS;
  if (raw === undefined || raw === "") return false;
  return !["0", "false", "no", "off"].includes(raw.trim().toLowerCase());
}

/** Comma-separated SIP trunk ids whose calls are probe (load-test) traffic. */
export function loadtestTrunkIds(env: Env): Set<string> {
  return new Set(
    (env.VOXGATE_LOADTEST_TRUNK_IDS ?? "")
      .split(",")
      .map((s) => s.trim())
      .filter(Boolean),
  );
}

/** Where Voxgate's own spans go: the OTLP/HTTP traces URL, its headers and the service name. */
export interface TraceExport {
  url: string;
  headers: Record<string, string>;
  serviceName: string;
}

/**
 * The trace export the standard variables ask for, or null (no endpoint, or OTEL_SDK_DISABLED=true).
 * Per the OTel specification: a signal-specific endpoint is used as is, the generic one gets
 * `/v1/traces` appended; headers are `key=value` pairs, comma-separated, values percent-decoded, the
 * signal-specific ones winning.
 */
export function traceExportOf(env: Env): TraceExport | null {
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === "true") return null;
  const generic = env.OTEL_EXPORTER_OTLP_ENDPOINT;
  const url = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ?? (generic ? `${generic.replace(/\/+$/, "")}/v1/traces` : null);
  if (!url) return null;
  const headers = { ...otlpHeaders(env.OTEL_EXPORTER_OTLP_HEADERS), ...otlpHeaders(env.OTEL_EXPORTER_OTLP_TRACES_HEADERS) };
  return { url, headers, serviceName: env.OTEL_SERVICE_NAME ?? "voxgate" };
}

function otlpHeaders(raw: string | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const pair of (raw ?? "").split(",")) {
    const eq = pair.indexOf("=");
    if (eq <= 0) continue;
    const key = pair.slice(0, eq).trim().toLowerCase();
    let value = pair.slice(eq + 1).trim();
    try {
      value = decodeURIComponent(value);
    } catch {
      // A malformed escape is kept as written rather than dropping the header.
    }
    if (key) out[key] = value;
  }
  return out;
}
