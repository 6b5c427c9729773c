import type { AuthContext } from "../auth/context.js";
import type { Logger } from "../logging.js";
import type { Services } from "../services.js";
import type { RouteContract } from "./openapi.js";

/** The Hono environment: every handler reads services and the caller's auth from c.var. */
export interface AppEnv {
  Variables: {
    services: Services;
    log: Logger;
    auth: AuthContext;
    /** The declared route that matched (set by defineRoute; read by the test-mode response check). */
    contract?: RouteContract;
  };
}
