import type { AuthContext } from "../auth/context.js";
import type { Logger } from "../logging.js";
import type { z } from "zod";

/**
 * The Hono environment: what every request carries. Subsystems are not here: each route module takes
 * the ones it uses as arguments of its factory (src/http/app.ts passes them).
 */
export interface AppEnv {
  Variables: {
    log: Logger;
    auth: AuthContext;
    /** serve.body_limit_bytes: the bound every body reader applies. */
    bodyLimitBytes: number;
    /** The declared route that matched (set by defineRoute; read by the test-mode response check). */
    contract?: RouteContract;
  };
}

export type HttpMethod = "get" | "post" | "put" | "patch" | "delete";

export interface ResponseSpec {
  description: string;
  /** JSON body schema; omitted for bodies that are not JSON (204, CSV, text). */
  schema?: z.ZodType;
  /** Content type when it is not application/json. */
  contentType?: string;
  /** Other content types the same answer may be sent in (negotiated), not checked against `schema`. */
  otherContentTypes?: readonly string[];
}

/** What the response check (src/http/openapi.ts) reads from c.var.contract. */
export interface RouteContract {
  method: HttpMethod;
  path: string;
  responses: Record<number, ResponseSpec>;
}
