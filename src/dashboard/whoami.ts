import type { AuthContext, KeyScope } from "../auth/context.js";
import { allows } from "../auth/context.js";

/** GET /api/whoami: what the presented key may do, so the web app shows only what will work. */
export interface Whoami {
  /** false: no keys configured, every caller is the operator (the self-hosted default). */
  auth_enabled: boolean;
  /** false: no key was presented while auth is on (the web app shows its sign-in screen). */
  authenticated: boolean;
  kind: AuthContext["kind"];
  /** Audit id of the key (vk_ key id, static:<name>, operator); never the key or its digest. */
  actor: string;
  role: AuthContext["role"];
  /** null: every tenant (operator). */
  tenant_id: string | null;
  scopes: readonly KeyScope[];
  can: {
    read: boolean;
    /** Telemetry and rate-card rule writes. */
    write: boolean;
    /** Providers, models and projects: write scope from a key bound to no tenant. */
    manage: boolean;
    /** Minting and revoking API keys. */
    admin: boolean;
  };
}

export function whoami(auth: AuthContext, authEnabled: boolean, authenticated = true): Whoami {
  const write = authenticated && allows(auth, "write");
  return {
    auth_enabled: authEnabled,
    authenticated,
    kind: auth.kind,
    actor: auth.actor,
    role: auth.role,
    tenant_id: auth.tenantId,
    scopes: auth.scopes,
    can: {
      read: authenticated && allows(auth, "read"),
      write,
      manage: write && auth.tenantId === null,
      admin: authenticated && allows(auth, "admin"),
    },
  };
}
