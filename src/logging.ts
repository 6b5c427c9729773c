import { pino, type Logger } from "pino";

export type { Logger };

/** Keys whose values never reach a log line, wherever they sit in a logged object. */
const REDACT_PATHS = [
  "authorization",
  "*.authorization",
  "headers.authorization",
  "req.headers.authorization",
  "api_key",
  "*.api_key",
  "apiKey",
  "*.apiKey",
  "api_secret",
  "*.api_secret",
  "password",
  "*.password",
  "plaintext",
  "*.plaintext",
  "secret",
  "*.secret",
];

export function createLogger(level: string = "info"): Logger {
  return pino({ level, base: { service: "voxgate" }, redact: { paths: REDACT_PATHS, censor: "***" } });
}

export const silentLogger: Logger = pino({ level: "silent" });

/** Keys shorter than this show nothing of themselves when masked. */
export const MASK_MIN_LENGTH = 20;

/**
 * A secret shortened for display: at most its last 4 characters ("…9xQz"), nothing of a secret
 * shorter than MASK_MIN_LENGTH ("****"). A prefix is never shown: for many vendors it is most of
 * what tells keys apart.
 */
export function maskSecret(secret: string | null | undefined): string | null {
  if (!secret) return null;
  if (secret.length < MASK_MIN_LENGTH) return "****";
  return `…${secret.slice(-4)}`;
}

