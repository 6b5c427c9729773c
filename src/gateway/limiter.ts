/** A slot of a provider's rate limit held by one call; release() when the call ended. */
export interface LimitGrant {
  release(): void;
}

export type LimitDecision = { ok: true; grant: LimitGrant } | { ok: false; retryAfterMs: number; reason: string };

/**
 * Outbound limits per provider (rate_limiting.<provider>): requests per minute and concurrent
 * streams. acquire() answers from in-memory state (tokens leased in batches from the fleet's shared
 * store in the background); it returns a promise only when this replica's batch ran out and the next
 * claim is in flight (once per batch, never per call).
 */
export interface ProviderLimiter {
  acquire(providerId: string): LimitDecision | Promise<LimitDecision>;
  stop?(): Promise<void>;
}

const NO_GRANT: LimitGrant = { release() {} };

/** No limits configured. */
export const UNLIMITED: ProviderLimiter = { acquire: () => ({ ok: true, grant: NO_GRANT }) };
