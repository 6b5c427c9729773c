import { Hono } from "hono";
import type { AppEnv } from "../http/app-env.js";

/** Placeholder: this area's routes land with its issue. */
export function ingestRoutes() {
  return new Hono<AppEnv>();
}
