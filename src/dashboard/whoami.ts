import type { AuthContext } from "../auth/context.js";
import { allows } from "../auth/context.js";
import type { Whoami } from "./schemas.js";

/** GET /api/whoami: what the presented key may do, so the web app shows only what will work (type from src/dashboard/schemas.ts). */
export type { Whoami } from "./schemas.js";

export function whoami(auth: AuthContext, authEnabled: boolean, authenticated = true): Whoami {
  const write = authenticated && allows(auth, "write");
  return {
    auth_enabled: authEnabled,
    authenticated,
    kind: auth.kind,
    actor: auth.actor,
    role: auth.role,
    tenant_id: auth.tenantId,
    scopes: [...auth.scopes],
    can: {
      read: authenticated && allows(auth, "read"),
      write,
      manage: write && auth.tenantId === null,
      admin: authenticated && allows(auth, "admin"),
    },
  };
}
