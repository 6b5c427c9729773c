import type { Context } from "hono";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import { z } from "zod";
import { isDatabaseUnavailable } from "../db/errors.js";
import { DomainError, type ErrorCode, validationError } from "../errors.js";

export { DomainError, type ErrorCode, parseOrThrow, validationError, zodDetails } from "../errors.js";

/**
 * The HTTP status of every error code (the closed list is src/errors.ts; `satisfies` keeps the two
 * in step both ways). One envelope: {"error": {code, message, details?}}.
 */
export const ERROR_CODES = {
  bad_request: 400,
  invalid_json: 400,
  invalid_rate_rule: 400,
  unpermitted_base_url: 400,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  method_not_allowed: 405,
  conflict: 409,
  payload_too_large: 413,
  unsupported_media_type: 415,
  validation_failed: 422,
  too_many_requests: 429,
  budget_exceeded: 429,
  internal_error: 500,
  bad_gateway: 502,
  unavailable: 503,
  upstream_timeout: 504,
} as const satisfies Record<ErrorCode, ContentfulStatusCode>;

/** A DomainError raised by the HTTP layer itself (routes, body reading), optionally with a status other than its code's. */
export class ApiError extends DomainError {
  override name = "ApiError";
  readonly status: ContentfulStatusCode;
  constructor(code: ErrorCode, message: string, details?: unknown, status?: ContentfulStatusCode) {
    super(code, message, details);
    this.status = status ?? ERROR_CODES[code];
  }
}

/** The status a DomainError answers with: its code's, unless an ApiError chose another. */
export function httpStatus(err: DomainError): ContentfulStatusCode {
  return err instanceof ApiError ? err.status : ERROR_CODES[err.code];
}

export function errorBody(code: string, message: string, details?: unknown) {
  return { error: details === undefined ? { code, message } : { code, message, details } };
}

/** Hono onError: a DomainError (ApiError included) as its envelope, anything else a 500 without internals. */
export function handleError(err: Error, c: Context): Response {
  if (err instanceof DomainError) return c.json(errorBody(err.code, err.message, err.details), httpStatus(err));
  if (err instanceof z.ZodError) {
    const e = validationError(err);
    return c.json(errorBody(e.code, e.message, e.details), httpStatus(e));
  }
  if (isDatabaseUnavailable(err)) {
    c.var.log?.warn({ err: err.message }, "backing connection unavailable");
    c.header("Retry-After", "1");
    return c.json(errorBody("unavailable", "temporarily unavailable (a connection to the database or a backing service failed); retry shortly"), 503);
  }
  c.var.log?.error({ err }, "unhandled error");
  return c.json(errorBody("internal_error", "internal error"), 500);
}
