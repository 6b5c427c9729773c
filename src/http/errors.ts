import type { Context } from "hono";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import { z } from "zod";
import { isDatabaseUnavailable } from "../db/errors.js";
import { DomainError, type ErrorCode, validationError } from "../errors.js";
import type { Logger } from "../logging.js";

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

/** What an error answers: a DomainError (ApiError included) as its envelope, anything else a 500 without internals (logged). */
export function errorAnswer(
  err: Error,
  log: Pick<Logger, "warn" | "error"> | undefined,
): { status: ContentfulStatusCode; body: ReturnType<typeof errorBody>; headers?: Record<string, string> } {
  if (err instanceof DomainError) return { status: httpStatus(err), body: errorBody(err.code, err.message, err.details) };
  if (err instanceof z.ZodError) {
    const e = validationError(err);
    return { status: httpStatus(e), body: errorBody(e.code, e.message, e.details) };
  }
  if (isDatabaseUnavailable(err)) {
    log?.warn({ err: err.message }, "backing connection unavailable");
    return {
      status: 503,
      body: errorBody("unavailable", "temporarily unavailable (a connection to the database or a backing service failed); retry shortly"),
      headers: { "Retry-After": "1" },
    };
  }
  log?.error({ err }, "unhandled error");
  return { status: 500, body: errorBody("internal_error", "internal error") };
}

/** Hono onError: the answer of errorAnswer. */
export function handleError(err: Error, c: Context): Response {
  const a = errorAnswer(err, c.var.log);
  for (const [k, v] of Object.entries(a.headers ?? {})) c.header(k, v);
  return c.json(a.body, a.status);
}
