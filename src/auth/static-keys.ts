import { createHash } from "node:crypto";
import type { Env } from "../config/env.js";
import { ConfigError } from "../config/load.js";
import type { Config } from "../config/schema.js";
import type { AuthContext, KeyScope } from "./context.js";

export interface StaticKey {
  digest: string;
  context: AuthContext;
}

/** Shortest static key accepted: a shorter one is guessable, so startup refuses it. */
export const MIN_STATIC_KEY_LENGTH = 16;

export function sha256Hex(value: string): string {
  return createHash("sha256").update(value).digest("hex");
}

interface StaticKeyEntry {
  key: string;
  scopes: KeyScope[];
  tenantId: string | null;
  /** Where the key was configured (config path or variable and position): errors name this, never the key. */
  position: string;
  name?: string;
}

/** VOXGATE_INGEST_KEY: one or more comma-separated keys with the ingest scope only (what agents get). */
export function ingestKeysFromEnv(value: string | undefined): string[] {
  return (value ?? "")
    .split(",")
    .map((k) => k.trim())
    .filter((k) => k !== "");
}

function configuredEntries(config: Config, env: Pick<Env, "VOXGATE_API_KEY" | "VOXGATE_INGEST_KEY">): StaticKeyEntry[] {
  const entries: StaticKeyEntry[] = [];
  config.auth.api_keys.forEach((e, i) => {
    const position = `auth.api_keys.${i}`;
    if (typeof e === "string") entries.push({ key: e, scopes: ["*"], tenantId: null, position });
    else entries.push({ key: e.key, scopes: e.scopes, tenantId: e.tenant_id ?? null, name: e.name, position });
  });
  if (env.VOXGATE_API_KEY) entries.push({ key: env.VOXGATE_API_KEY, scopes: ["*"], tenantId: null, name: "VOXGATE_API_KEY", position: "VOXGATE_API_KEY" });
  const ingest = ingestKeysFromEnv(env.VOXGATE_INGEST_KEY);
  ingest.forEach((key, i) => {
    const position = ingest.length > 1 ? `VOXGATE_INGEST_KEY entry ${i + 1} of ${ingest.length}` : "VOXGATE_INGEST_KEY";
    entries.push({ key, scopes: ["ingest"], tenantId: null, name: "VOXGATE_INGEST_KEY", position });
  });
  return entries;
}

/**
 * Static keys from auth.api_keys, VOXGATE_API_KEY (the operator's `*` key) and VOXGATE_INGEST_KEY
 * (ingest only), indexed by SHA-256 of the key: lookup compares digests, never the secret itself, so
 * it leaks no timing about the key. A key that is too short, in the vk_ namespace or configured twice
 * stops startup with its position, never its value.
 */
export function staticKeysFromConfig(config: Config, env: Pick<Env, "VOXGATE_API_KEY" | "VOXGATE_INGEST_KEY">): Map<string, StaticKey> {
  const keys = new Map<string, StaticKey>();
  const positions = new Map<string, string>();
  for (const e of configuredEntries(config, env)) {
    // vk_ is the minted-key namespace; a static key there would be looked up as a virtual key.
    if (e.key.startsWith("vk_")) {
      throw new ConfigError(`static API key ${e.position} must not start with "vk_" (reserved for minted keys)`);
    }
    if (e.key.length < MIN_STATIC_KEY_LENGTH) {
      throw new ConfigError(
        `static API key ${e.position} is ${e.key.length} characters long; static keys must have at least ${MIN_STATIC_KEY_LENGTH} (voxgate keys new-static prints a strong one)`,
      );
    }
    const digest = sha256Hex(e.key);
    const first = positions.get(digest);
    if (first !== undefined) throw new ConfigError(`static API key ${e.position} is the same key as ${first}: configure each key once`);
    positions.set(digest, e.position);
    keys.set(digest, {
      digest,
      context: {
        kind: "static",
        actor: `static:${e.name ?? digest.slice(0, 12)}`,
        tenantId: e.tenantId,
        scopes: e.scopes,
        role: e.tenantId ? "tenant" : "admin",
      },
    });
  }
  return keys;
}
