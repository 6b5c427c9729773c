import { Hono } from "hono";
import type { AppEnv } from "../http/app-env.js";

/** Placeholder: GET /v1/audit-log lands with the read-path issue. */
export function auditRoutes() {
  return new Hono<AppEnv>();
}
