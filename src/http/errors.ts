import type { Context } from "hono";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import { z } from "zod";
import { isDatabaseUnavailable } from "../db/errors.js";
import type { Logger } from "../logging.js";

/** Every error code Voxgate answers with. One envelope: {"error": {code, message, details?}}. */
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
} as const satisfies Record<string, ContentfulStatusCode>;

export type ErrorCode = keyof typeof ERROR_CODES;

export class ApiError extends Error {
  override name = "ApiError";
  readonly status: ContentfulStatusCode;
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly details?: unknown,
    status?: ContentfulStatusCode,
  ) {
    super(message);
    this.status = status ?? ERROR_CODES[code];
  }
}

export function errorBody(code: string, message: string, details?: unknown) {
  return { error: details === undefined ? { code, message } : { code, message, details } };
}

/** Zod issues as {path, message}: the offending field paths, joined with dots. */
export function zodDetails(error: z.ZodError) {
  return error.issues.map((i) => ({ path: i.path.map(String).join("."), message: i.message }));
}

export function validationError(error: z.ZodError, message = "request failed validation"): ApiError {
  const fields = zodDetails(error);
  const first = fields[0];
  return new ApiError("validation_failed", first ? `${message}: ${first.path || "(body)"}: ${first.message}` : message, fields);
}

/** Parses with a zod schema or throws the 422 envelope. */
export function parseOrThrow<T extends z.ZodType>(schema: T, input: unknown, message?: string): z.infer<T> {
  const result = schema.safeParse(input);
  if (!result.success) throw validationError(result.error, message);
  return result.data;
}

/** What an error answers: ApiError as its envelope, anything else a 500 without internals (logged). */
export function errorAnswer(
  err: Error,
  log: Pick<Logger, "warn" | "error"> | undefined,
): { status: ContentfulStatusCode; body: ReturnType<typeof errorBody>; headers?: Record<string, string> } {
  if (err instanceof ApiError) return { status: err.status, body: errorBody(err.code, err.message, err.details) };
  if (err instanceof z.ZodError) {
    const e = validationError(err);
    return { status: e.status, body: errorBody(e.code, e.message, e.details) };
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

