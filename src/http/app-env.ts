import type { AuthContext } from "../auth/context.js";
import type { Logger } from "../logging.js";
import type { Services } from "../services.js";

/** The Hono environment: every handler reads services and the caller's auth from c.var. */
export interface AppEnv {
  Variables: {
    services: Services;
    log: Logger;
    auth: AuthContext;
  };
}
