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

/** A secret shortened for display: "sk-a…9xQz". Short secrets show nothing but their length class. */
export function maskSecret(secret: string | null | undefined): string | null {
  if (!secret) return null;
  if (secret.length <= 12) return "****";
  return `${secret.slice(0, 4)}…${secret.slice(-4)}`;
}

/** user:password@ in a URL becomes ***@ so targets can be logged. */
export function maskUrlCredentials(url: string): string {
  return url.replace(/^([a-z][a-z0-9+.-]*:\/\/)[^/@]*@/i, "$1***@");
}
