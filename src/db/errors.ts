/**
 * Classifying database errors, once for every area. Drizzle wraps driver errors, so each check
 * looks through `cause` a few levels deep for the SQLSTATE (or Node errno) it needs.
 */

function codesOf(err: unknown): string[] {
  const codes: string[] = [];
  for (let e: unknown = err, i = 0; e && typeof e === "object" && i < 5; e = (e as { cause?: unknown }).cause, i++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === "string") codes.push(code);
  }
  return codes;
}

/** The SQLSTATE of a database error, if any. */
export function sqlState(err: unknown): string | undefined {
  return codesOf(err).find((c) => /^[0-9A-Z]{5}$/.test(c));
}

/** Deadlock or serialization failure: the whole transaction may simply be run again. */
export function isRetryable(err: unknown): boolean {
  const code = sqlState(err);
  return code === "40P01" || code === "40001";
}

/** Data exception (22…) or integrity violation (23…): retrying the same write cannot succeed. */
export function isDataError(err: unknown): boolean {
  return codesOf(err).some((c) => /^2[23][0-9A-Z]{3}$/.test(c));
}

const CONNECTION_ERRNOS = new Set(["ECONNREFUSED", "ECONNRESET", "ETIMEDOUT", "EPIPE", "ENOTFOUND", "EAI_AGAIN"]);
const CONNECTION_MESSAGES =
  /connection terminated|timeout exceeded when trying to connect|not queryable|connection error|server closed the connection/i;

/**
 * A lost or refused database connection (Postgres restarting, failover): the caller should retry,
 * so it is a 503, not a 500. SQLSTATE 08xxx, 57P01-57P03 (shutdown / starting up), 53300.
 */
export function isDatabaseUnavailable(err: unknown): boolean {
  for (let e: unknown = err, i = 0; e && typeof e === "object" && i < 5; e = (e as { cause?: unknown }).cause, i++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === "string") {
      if (CONNECTION_ERRNOS.has(code) || code.startsWith("08") || ["57P01", "57P02", "57P03", "53300"].includes(code)) return true;
    }
    const message = (e as { message?: unknown }).message;
    if (typeof message === "string" && CONNECTION_MESSAGES.test(message)) return true;
  }
  return false;
}

/** Runs a transaction, re-running it a few times on deadlock/serialization failure. */
export async function withRetry<T>(fn: () => Promise<T>, attempts = 4): Promise<T> {
  for (let i = 1; ; i++) {
    try {
      return await fn();
    } catch (err) {
      if (i >= attempts || !isRetryable(err)) throw err;
      await new Promise((r) => setTimeout(r, 10 * i + Math.random() * 20));
    }
  }
}
