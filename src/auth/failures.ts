import type { Logger } from "../logging.js";

/** At most one warn line per this interval; the lines in between are counted into the next one. */
export const AUTH_FAILURE_LOG_INTERVAL_MS = 10_000;

export type CredentialKind = "virtual" | "static";

/**
 * Failed authentications (a token was presented and refused), counted per credential kind for
 * /v1/metrics since this process started, and logged at warn, rate-limited: a flood of wrong tokens
 * is one line per interval, never one per request. Nothing of a token is logged except the public
 * prefix of a vk_ token (the part /v1/api-keys shows), which names the key being guessed at.
 */
export class AuthFailures {
  private readonly totals: Record<CredentialKind, number> = { virtual: 0, static: 0 };
  private unlogged = 0;
  private lastLogAt = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly log: Logger,
    private readonly now: () => number = Date.now,
  ) {}

  record(kind: CredentialKind, vkPrefix: string | null): void {
    this.totals[kind]++;
    this.unlogged++;
    const t = this.now();
    if (t - this.lastLogAt < AUTH_FAILURE_LOG_INTERVAL_MS) return;
    this.log.warn(
      { failed: this.unlogged, credential: kind, key_prefix: vkPrefix ?? undefined, interval_s: AUTH_FAILURE_LOG_INTERVAL_MS / 1000 },
      "authentication failed (a presented key was refused; further failures are summed into one line per interval)",
    );
    this.unlogged = 0;
    this.lastLogAt = t;
  }

  counts(): Readonly<Record<CredentialKind, number>> {
    return this.totals;
  }
}
