import { DomainError, type ErrorCode } from "../errors.js";

/**
 * The CLI's mapping of the closed error-code list (the HTTP one is http/errors.ts): 2 when the
 * input was refused (fix the arguments and retry), 1 when the operation failed. Exhaustive, so a
 * new code needs a decision here.
 */
export const CLI_EXIT_CODES = {
  bad_request: 2,
  invalid_json: 2,
  invalid_rate_rule: 2,
  unpermitted_base_url: 2,
  unauthorized: 2,
  forbidden: 2,
  not_found: 2,
  method_not_allowed: 2,
  conflict: 2,
  payload_too_large: 2,
  unsupported_media_type: 2,
  validation_failed: 2,
  too_many_requests: 1,
  budget_exceeded: 1,
  internal_error: 1,
  bad_gateway: 1,
  unavailable: 1,
  upstream_timeout: 1,
} as const satisfies Record<ErrorCode, 1 | 2>;

/** What a command prints for a DomainError: the message, then its details as one JSON line. */
export function cliErrorText(err: DomainError): string {
  return `voxgate: ${err.message}\n${err.details === undefined ? "" : `${JSON.stringify(err.details)}\n`}`;
}

/** Writes a failed command's error to stderr and returns its exit code (DomainError mapped, anything else 1). */
export function reportCliError(err: unknown, write: (text: string) => void = (t) => process.stderr.write(t)): number {
  if (err instanceof DomainError) {
    write(cliErrorText(err));
    return CLI_EXIT_CODES[err.code];
  }
  write(`voxgate: ${err instanceof Error ? err.message : String(err)}\n`);
  return 1;
}
