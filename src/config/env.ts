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
  LIVEKIT_API_KEY: z.string().min(1).optional(),
  LIVEKIT_API_SECRET: z.string().min(1).optional(),
  LOG_LEVEL: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).optional(),
  HOME: z.string().optional(),
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
