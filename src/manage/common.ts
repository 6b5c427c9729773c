import { createMiddleware } from "hono/factory";
import { z } from "zod";
import { DomainError } from "../errors.js";
import type { AppEnv } from "../http/app-env.js";

/** Provider and project ids: a letter or digit, then letters, digits, `_`, `-`, `.`; no slash. */
export const ENTITY_ID = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;
export const entityId = z.string().regex(ENTITY_ID, "must be 1-64 letters, digits, '_', '-' or '.', starting with a letter or digit");

/** `confirm` of the DELETE routes: true/false/1/0; anything else is a 422, not a silent preview. */
export const confirmQuery = z.strictObject({
  confirm: z
    .enum(["true", "false", "1", "0"], { message: "confirm must be true or false" })
    .optional()
    .transform((v) => v === "true" || v === "1"),
});

/** 403 for a tenant-bound key: what follows is operator-global configuration. */
function operatorOnly(message: string) {
  return Object.assign(
    createMiddleware<AppEnv>(async (c, next) => {
      assertUntenanted(c.var.auth, message);
      await next();
    }),
    { message },
  );
}

/** The check of operatorOnly as a plain function (for callers other than a route, such as MCP tools). */
export function assertUntenanted(auth: { tenantId: string | null }, message: string): void {
  if (auth.tenantId !== null) throw new DomainError("forbidden", message);
}

/**
 * Providers, models and projects are operator-global configuration: a tenant-bound key may read
 * models and projects but not change them (nor make the service call a provider with a stored key).
 */
export const requireUntenanted = operatorOnly("providers, models and projects are operator configuration; a tenant-bound key cannot change them");

/**
 * Provider setup (ids, types, base URLs, masked keys, connectivity) is the operator's: a tenant-bound
 * key gets 403 on every provider route, reads included (docs/auth.md).
 */
export const requireOperatorForProviders = operatorOnly("provider setup is the operator's; a tenant-bound key cannot read or change providers");

export function yamlForbidden(kind: string, id: string, verb: string): DomainError {
  return new DomainError("forbidden", `${kind} ${id} is defined in voxgate.yaml (source yaml) and cannot be ${verb} through the API; edit the file`);
}

/** True when the text holds whitespace or an ASCII control character (where parsers disagree). */
export function hasSpaceOrControl(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code <= 0x20 || code === 0x7f || /\s/.test(text.charAt(i))) return true;
  }
  return false;
}
