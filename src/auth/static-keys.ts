import { createHash } from "node:crypto";
import { ConfigError } from "../config/load.js";
import type { Config } from "../config/schema.js";
import type { AuthContext, KeyScope } from "./context.js";

export interface StaticKey {
  digest: string;
  context: AuthContext;
}

export function sha256Hex(value: string): string {
  return createHash("sha256").update(value).digest("hex");
}

/**
 * Static keys from auth.api_keys and VOXGATE_API_KEY, indexed by SHA-256 of the key:
 * lookup compares digests, never the secret itself, so it leaks no timing about the key.
 */
export function staticKeysFromConfig(config: Config, envKey: string | undefined): Map<string, StaticKey> {
  const entries: { key: string; scopes: KeyScope[]; tenantId: string | null; name?: string }[] = [];
  for (const e of config.auth.api_keys) {
    if (typeof e === "string") entries.push({ key: e, scopes: ["*"], tenantId: null });
    else entries.push({ key: e.key, scopes: e.scopes, tenantId: e.tenant_id ?? null, name: e.name });
  }
  if (envKey) entries.push({ key: envKey, scopes: ["*"], tenantId: null, name: "VOXGATE_API_KEY" });

  const keys = new Map<string, StaticKey>();
  for (const e of entries) {
    // vk_ is the minted-key namespace; a static key there would be looked up as a virtual key.
    if (e.key.startsWith("vk_")) {
      throw new ConfigError(`static API key ${e.name ?? "in auth.api_keys"} must not start with "vk_" (reserved for minted keys)`);
    }
    const digest = sha256Hex(e.key);
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
