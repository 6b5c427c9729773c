import { randomUUID } from "node:crypto";
import { sql } from "drizzle-orm";
import { type Db, queryRows, rowsOf } from "../db/client.js";
import type { Logger } from "../logging.js";
import type { LimitDecision, LimitGrant, ProviderLimiter } from "./limiter.js";

export const MINUTE_MS = 60_000;
/** Share of a per-minute limit one claim takes: small, so replicas hoard little of the fleet's budget. */
export const RPM_BATCH_SHARE = 0.02;
/** A stream-slot lease lives this long unless renewed (a dead replica's slots lapse after it). */
export const STREAM_LEASE_TTL_MS = 15_000;
/** How often held stream slots are renewed, and shrunk to what is in use plus one batch. */
export const STREAM_LEASE_RENEW_MS = 5_000;

export interface ProviderLimits {
  requestsPerMinute?: number;
  concurrentStreams?: number;
}

interface RpmState {
  window: number;
  tokens: number;
  /** The fleet granted the whole minute: nothing left until the next one. */
  exhausted: boolean;
  claiming: Promise<void> | null;
}

interface StreamState {
  held: number;
  inUse: number;
  claiming: Promise<void> | null;
}

const batchOf = (limit: number) => Math.max(1, Math.ceil(limit * RPM_BATCH_SHARE));

/**
 * Outbound limits shared by every replica on one Postgres, without a database round trip per call:
 * - requests per minute: each calendar minute of each provider is one row; a replica claims tokens in
 *   batches (RPM_BATCH_SHARE of the limit) with one atomic upsert that never grants past the limit, and
 *   spends them from memory. It claims the next batch when its tokens run low, so a call waits for the
 *   store only when a burst empties the batch before the refill came back (once per batch).
 * - concurrent streams: each replica holds slots (a lease row renewed every STREAM_LEASE_RENEW_MS,
 *   lapsing after STREAM_LEASE_TTL_MS); a claim under an advisory lock grants only what the live
 *   leases of all replicas leave under the cap.
 * Over the limit a call is refused with the wait until the next minute (or a second, for streams).
 */
export class FleetLimiter implements ProviderLimiter {
  private readonly rpm = new Map<string, RpmState>();
  private readonly streams = new Map<string, StreamState>();
  private readonly replicaId = randomUUID();
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly db: Db,
    private readonly limits: ReadonlyMap<string, ProviderLimits>,
    private readonly log: Logger,
    private readonly now: () => number = Date.now,
  ) {
    this.timer = setInterval(() => void this.renewStreams(), STREAM_LEASE_RENEW_MS);
    this.timer.unref();
  }

  acquire(providerId: string): LimitDecision | Promise<LimitDecision> {
    const limits = this.limits.get(providerId);
    if (!limits) return OK_UNLIMITED;
    if (limits.concurrentStreams !== undefined) {
      const s = this.streamState(providerId);
      if (s.inUse >= s.held) return this.acquireStreamSlow(providerId, limits);
      return this.afterStream(providerId, limits, s);
    }
    return this.acquireRpm(providerId, limits);
  }

  private afterStream(providerId: string, limits: ProviderLimits, s: StreamState): LimitDecision | Promise<LimitDecision> {
    s.inUse++;
    const release = streamRelease(s);
    if (limits.requestsPerMinute === undefined) return { ok: true, grant: release };
    const rpm = this.acquireRpm(providerId, limits);
    const settle = (d: LimitDecision): LimitDecision => {
      if (d.ok) return { ok: true, grant: release };
      release.release();
      return d;
    };
    return rpm instanceof Promise ? rpm.then(settle) : settle(rpm);
  }

  private async acquireStreamSlow(providerId: string, limits: ProviderLimits): Promise<LimitDecision> {
    const s = this.streamState(providerId);
    const cap = limits.concurrentStreams ?? 0;
    s.claiming ??= this.claimStreams(providerId, cap, s.inUse + batchOf(cap)).finally(() => {
      s.claiming = null;
    });
    await s.claiming;
    if (s.inUse >= s.held) return { ok: false, retryAfterMs: 1000, reason: `concurrent_streams ${cap} in use across the fleet` };
    return this.afterStream(providerId, limits, s);
  }

  private acquireRpm(providerId: string, limits: ProviderLimits): LimitDecision | Promise<LimitDecision> {
    const limit = limits.requestsPerMinute;
    if (limit === undefined) return OK_UNLIMITED;
    const t = this.now();
    const window = Math.floor(t / MINUTE_MS);
    let s = this.rpm.get(providerId);
    if (!s || s.window !== window) {
      s = { window, tokens: 0, exhausted: false, claiming: null };
      this.rpm.set(providerId, s);
    }
    const batch = batchOf(limit);
    if (s.tokens > 0) {
      s.tokens--;
      // Claim ahead: the next batch is on its way before this one runs out.
      if (s.tokens < Math.ceil(batch / 2) && !s.exhausted) this.refill(providerId, limit, s);
      return OK_UNLIMITED;
    }
    if (s.exhausted) return refusedUntilNextMinute(limit, t);
    const state = s;
    return this.refill(providerId, limit, state).then(() => {
      if (state.tokens > 0) {
        state.tokens--;
        return OK_UNLIMITED;
      }
      return refusedUntilNextMinute(limit, this.now());
    });
  }

  private refill(providerId: string, limit: number, s: RpmState): Promise<void> {
    s.claiming ??= this.claimRpm(providerId, limit, s).finally(() => {
      s.claiming = null;
    });
    return s.claiming;
  }

  private async claimRpm(providerId: string, limit: number, s: RpmState): Promise<void> {
    const want = batchOf(limit);
    try {
      const [row] = await queryRows<{ last_claim: number; granted: number }>(
        this.db,
        sql`INSERT INTO gateway_rate_windows AS w (provider_id, window_start, granted, last_claim)
            VALUES (${providerId}, ${new Date(s.window * MINUTE_MS)}, LEAST(${want}::int, ${limit}::int), LEAST(${want}::int, ${limit}::int))
            ON CONFLICT (provider_id, window_start) DO UPDATE
               SET last_claim = LEAST(${want}::int, GREATEST(0, ${limit}::int - w.granted)),
                   granted = w.granted + LEAST(${want}::int, GREATEST(0, ${limit}::int - w.granted))
            RETURNING last_claim, granted`,
      );
      const claimed = Number(row?.last_claim ?? 0);
      s.tokens += claimed;
      if (Number(row?.granted ?? limit) >= limit) s.exhausted = true;
    } catch (err) {
      // The store is unreachable: fail closed for this batch (the limit is the operator's promise).
      this.log.warn({ err: (err as Error).message, provider: providerId }, "rate limit tokens could not be claimed");
    }
  }

  private streamState(providerId: string): StreamState {
    let s = this.streams.get(providerId);
    if (!s) {
      s = { held: 0, inUse: 0, claiming: null };
      this.streams.set(providerId, s);
    }
    return s;
  }

  /** Sets this replica's holding to at most `want`, within what the other replicas' live leases leave. */
  private async claimStreams(providerId: string, cap: number, want: number): Promise<void> {
    const s = this.streamState(providerId);
    try {
      const held = await this.db.transaction(async (tx) => {
        await tx.execute(sql`SELECT pg_advisory_xact_lock(hashtext(${`voxgate:streams:${providerId}`}))`);
        const [others] = rowsOf<{ n: string | number }>(
          await tx.execute(sql`SELECT coalesce(sum(slots), 0) AS n FROM gateway_stream_leases
               WHERE provider_id = ${providerId} AND replica_id <> ${this.replicaId} AND expires_at > now()`),
        );
        const grant = Math.max(s.inUse, Math.min(want, cap - Number(others?.n ?? 0)));
        await tx.execute(sql`INSERT INTO gateway_stream_leases (provider_id, replica_id, slots, expires_at)
                             VALUES (${providerId}, ${this.replicaId}, ${grant}, now() + ${`${STREAM_LEASE_TTL_MS} milliseconds`}::interval)
                             ON CONFLICT (provider_id, replica_id) DO UPDATE SET slots = excluded.slots, expires_at = excluded.expires_at`);
        return grant;
      });
      s.held = Math.max(0, Math.min(held, cap));
    } catch (err) {
      this.log.warn({ err: (err as Error).message, provider: providerId }, "stream slots could not be claimed");
    }
  }

  /** Renews held slots, shrunk to those in use plus one batch, so idle slots go back to the fleet. */
  private async renewStreams(): Promise<void> {
    for (const [providerId, s] of this.streams) {
      const cap = this.limits.get(providerId)?.concurrentStreams;
      if (cap === undefined || s.claiming) continue;
      s.claiming = this.claimStreams(providerId, cap, Math.min(s.held, s.inUse + batchOf(cap))).finally(() => {
        s.claiming = null;
      });
      await s.claiming;
    }
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    if (this.streams.size === 0) return;
    await this.db.execute(sql`DELETE FROM gateway_stream_leases WHERE replica_id = ${this.replicaId}`).catch(() => {});
  }
}

const NO_GRANT: LimitGrant = { release() {} };
const OK_UNLIMITED: LimitDecision = { ok: true, grant: NO_GRANT };

function refusedUntilNextMinute(limit: number, t: number): LimitDecision {
  return { ok: false, retryAfterMs: MINUTE_MS - (t % MINUTE_MS), reason: `requests_per_minute ${limit} used across the fleet` };
}

function streamRelease(s: StreamState): LimitGrant {
  let done = false;
  return {
    release() {
      if (done) return;
      done = true;
      s.inUse--;
    },
  };
}

/** rate_limiting.<provider> of voxgate.yaml as limits per provider id. */
export function limitsFromConfig(config: Record<string, { requests_per_minute?: number; concurrent_streams?: number }>): Map<string, ProviderLimits> {
  const out = new Map<string, ProviderLimits>();
  for (const [id, l] of Object.entries(config)) {
    if (l.requests_per_minute === undefined && l.concurrent_streams === undefined) continue;
    out.set(id, { requestsPerMinute: l.requests_per_minute, concurrentStreams: l.concurrent_streams });
  }
  return out;
}
