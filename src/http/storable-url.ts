import type { MiddlewareHandler } from "hono";
import { matchedRoutes } from "hono/route";
import { UNAUTHENTICATED } from "../auth/gate.js";
import type { AppEnv } from "./app-env.js";
import { ApiError } from "./errors.js";
import { isStorableText, UNSTORABLE_MESSAGE } from "./storable.js";

/** The route parameter that holds path segment `index`, from the matched route patterns ("path" if none). */
function paramNameAt(routes: readonly { path: string }[], index: number, segmentCount: number): string {
  for (const route of routes) {
    const parts = route.path.split("/");
    const greedy = parts.findIndex((p) => p.startsWith(":") && p.includes("{.+}"));
    if (parts.length !== segmentCount && (greedy < 0 || greedy > index)) continue;
    const part = greedy >= 0 && greedy <= index ? parts[greedy] : parts[index];
    if (part?.startsWith(":")) return part.slice(1).replace(/\{.*\}$/, "").replace(/\?$/, "");
  }
  return "path";
}

/**
 * The edge check for URL input, once for every route: a decoded path segment or query value holding
 * NUL (the only character URL decoding yields that Postgres text refuses) is refused before any
 * handler runs. A path parameter is an id lookup, so it answers 404 like any missing id; a query
 * value answers 422 naming the parameter. Callers without a valid key fall through to the route's
 * gate (401 first, as for any other input).
 */
export const refuseUnstorableUrl: MiddlewareHandler<AppEnv> = async (c, next) => {
  const url = c.req.url;
  if (!url.includes("%00") || c.var.auth === UNAUTHENTICATED) return next();
  const queryAt = url.indexOf("?");
  const rawPath = new URL(url).pathname;
  const segments = rawPath.split("/");
  for (const [index, segment] of segments.entries()) {
    if (!segment.includes("%00")) continue;
    const name = paramNameAt(matchedRoutes(c), index, segments.length);
    throw new ApiError("not_found", `no such ${name}: path parameter ${name} ${UNSTORABLE_MESSAGE}`, [{ path: name, message: UNSTORABLE_MESSAGE }]);
  }
  if (queryAt >= 0) {
    for (const [key, values] of Object.entries(c.req.queries())) {
      const name = isStorableText(key) ? key : "(query parameter name)";
      if (name === key && values.every(isStorableText)) continue;
      throw new ApiError("validation_failed", `query parameter ${name} ${UNSTORABLE_MESSAGE}`, [{ path: name, message: UNSTORABLE_MESSAGE }]);
    }
  }
  return next();
};
