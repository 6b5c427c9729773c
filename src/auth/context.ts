import { type SQL, sql } from "drizzle-orm";
import type { AnyPgColumn } from "drizzle-orm/pg-core";

/**
 * What a key may do. `*` is read+write+ingest+infer (+admin for static and admin-role keys). `infer`
 * (calls through the gateway, which spend provider money) is granted by `*` or `infer` only: neither
 * read, write, ingest nor admin alone allows it, so the agents' ingest key cannot spend.
 */
export const KEY_SCOPES = ["read", "write", "ingest", "infer", "admin", "*"] as const;
export type KeyScope = (typeof KEY_SCOPES)[number];

/** What a route asks for. ingest = telemetry writes only; write = those plus configuration changes. */
export type Permission = "read" | "write" | "ingest" | "infer" | "admin";

export interface AuthContext {
  /** none: auth is off (self-hosted default); static: a config key; virtual: a minted vk_ key. */
  kind: "none" | "static" | "virtual";
  /** Stable id for audit: the vk_ key id, "static:<name or hash prefix>", or "operator". */
  actor: string;
  /** null means every tenant (operator); otherwise reads and writes are confined to this tenant. */
  tenantId: string | null;
  scopes: readonly KeyScope[];
  role: "operator" | "tenant" | "admin";
}

export const OPERATOR: AuthContext = { kind: "none", actor: "operator", tenantId: null, scopes: ["*"], role: "operator" };

export function allows(auth: AuthContext, need: Permission): boolean {
  if (auth.kind === "none") return true;
  const s = auth.scopes;
  const canAdmin = s.includes("admin") || (s.includes("*") && auth.role !== "tenant");
  if (need === "admin") return canAdmin;
  if (need === "infer") return s.includes("*") || s.includes("infer");
  if (canAdmin || s.includes("*")) return true;
  if (need === "read") return s.includes("read");
  if (need === "write") return s.includes("write");
  return s.includes("write") || s.includes("ingest");
}

/**
 * The one tenant-scoping path: a condition confining `column` to the caller's tenant,
 * or undefined for operators (who see every tenant). Store functions take it; handlers never re-check.
 */
export function tenantCondition(column: AnyPgColumn, scope: TenantScope): SQL | undefined {
  return scope.tenantId === null ? undefined : sql`${column} = ${scope.tenantId}`;
}

/**
 * Rows that belong to exactly this tenant (null: the untenanted, operator rows). How the rows of one
 * tenant's entity are found whoever reads them (a session's requests, turns and dead air), so an
 * operator's view of tenant b's session never shows tenant a's rows filed under the same id.
 */
export function ownedBy(column: AnyPgColumn, tenantId: string | null): SQL {
  return tenantId === null ? sql`${column} is null` : sql`${column} = ${tenantId}`;
}

/** The slice of AuthContext that query functions need. */
export interface TenantScope {
  tenantId: string | null;
}
