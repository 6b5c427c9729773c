import { Hono } from "hono";
import type { AppEnv } from "../http/app-env.js";

/** Placeholder: sessions, rooms and /api/sessions land with the read-path issue. */
export function sessionRoutes() {
  return new Hono<AppEnv>();
}
