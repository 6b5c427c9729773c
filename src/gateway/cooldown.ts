/** A provider that failed is skipped for this long when the upstream gave no Retry-After. */
export const DEFAULT_COOLDOWN_MS = 2_000;

/**
 * Providers cooling down after a connect error, timeout, 429 or 5xx: skipped while another candidate
 * remains (the last candidate is always tried). The pause is the upstream's Retry-After when it sent
 * one, else DEFAULT_COOLDOWN_MS, and never longer than `maxMs` (gateway.max_cooldown_ms).
 */
export class Cooldowns {
  private readonly until = new Map<string, number>();
  constructor(
    private readonly maxMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  cooling(providerId: string): boolean {
    const t = this.until.get(providerId);
    if (t === undefined) return false;
    if (t <= this.now()) {
      this.until.delete(providerId);
      return false;
    }
    return true;
  }

  /** Cools a provider down for Retry-After (seconds or an HTTP date) or the default, bounded by maxMs. */
  fail(providerId: string, retryAfter: string | null): void {
    const ms = Math.min(this.maxMs, retryAfterMs(retryAfter, this.now()) ?? DEFAULT_COOLDOWN_MS);
    this.until.set(providerId, Math.max(this.until.get(providerId) ?? 0, this.now() + ms));
  }

  /** Milliseconds until the provider is tried again (0 when not cooling). */
  remainingMs(providerId: string): number {
    const t = this.until.get(providerId);
    return t === undefined ? 0 : Math.max(0, t - this.now());
  }
}

/** Retry-After as milliseconds: delta-seconds or an HTTP date; null when absent or unreadable. */
export function retryAfterMs(value: string | null | undefined, now: number): number | null {
  if (!value) return null;
  const v = value.trim();
  if (/^\d+(\.\d+)?$/.test(v)) return Math.round(Number(v) * 1000);
  const at = Date.parse(v);
  return Number.isFinite(at) ? Math.max(0, at - now) : null;
}
