import type { z } from "zod";

/**
 * The closed list of error codes Voxgate answers with, whatever the transport. A leaf module: the
 * domain (manage/, billing/, secrets/, calls/, …) throws DomainError without knowing about HTTP; the
 * HTTP error handler (http/errors.ts) maps each code to its status and the one envelope
 * {"error": {code, message, details?}}, and the CLI maps it to its message and exit code.
 */
export const ERROR_CODE_LIST = [
  "bad_request",
  "invalid_json",
  "invalid_rate_rule",
  "unpermitted_base_url",
  "unauthorized",
  "forbidden",
  "not_found",
  "method_not_allowed",
  "conflict",
  "payload_too_large",
  "unsupported_media_type",
  "validation_failed",
  "too_many_requests",
  "budget_exceeded",
  "internal_error",
  "bad_gateway",
  "unavailable",
  "upstream_timeout",
] as const;

export type ErrorCode = (typeof ERROR_CODE_LIST)[number];

/** A refusal the caller can act on: one code of the closed list, a message, optional structured details. */
export class DomainError extends Error {
  override name = "DomainError";
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly details?: unknown,
  ) {
    super(message);
  }
}

/** Zod issues as {path, message}: the offending field paths, joined with dots. */
export function zodDetails(error: z.ZodError) {
  return error.issues.map((i) => ({ path: i.path.map(String).join("."), message: i.message }));
}

/** The validation_failed error of a zod failure: the first issue in the message, all of them in details. */
export function validationError(error: z.ZodError, message = "request failed validation"): DomainError {
  const fields = zodDetails(error);
  const first = fields[0];
  return new DomainError("validation_failed", first ? `${message}: ${first.path || "(body)"}: ${first.message}` : message, fields);
}

/** Parses with a zod schema or throws validation_failed (422 over HTTP). */
export function parseOrThrow<T extends z.ZodType>(schema: T, input: unknown, message?: string): z.infer<T> {
  const result = schema.safeParse(input);
  if (!result.success) throw validationError(result.error, message);
  return result.data;
}
