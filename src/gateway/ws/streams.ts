import type { AuthContext } from "../../auth/context.js";
import type { Config } from "../../config/schema.js";

/** gateway.streams in milliseconds and bytes. */
export interface StreamLimits {
  idleMs: number;
  maxDurationMs: number;
  maxPerKey: number;
  maxBufferedBytes: number;
  stallMs: number;
  /** One budget increment of a stream: seconds of audio (STT), characters (TTS). */
  reserveSeconds: number;
  reserveCharacters: number;
  /** Live failover: silence from the vendor this long while the client sends audio fails the leg. */
  vendorStallMs: number;
  /** Live failover: seconds of client audio kept for replay to the next leg. */
  replaySeconds: number;
}

export function streamLimits(cfg: Config["gateway"]["streams"]): StreamLimits {
  return {
    idleMs: cfg.idle_timeout_s * 1000,
    maxDurationMs: cfg.max_duration_s * 1000,
    maxPerKey: cfg.max_per_key,
    maxBufferedBytes: cfg.max_buffered_bytes,
    stallMs: cfg.stall_timeout_s * 1000,
    reserveSeconds: cfg.reserve_seconds,
    reserveCharacters: cfg.reserve_characters,
    vendorStallMs: cfg.stall_ms,
    replaySeconds: cfg.replay_seconds,
  };
}

/** The close codes and reasons the gateway ends a governed stream with. */
export const CLOSE_IDLE = { code: 1000, reason: "idle timeout" } as const;
export const CLOSE_MAX_DURATION = { code: 1000, reason: "max duration" } as const;
export const CLOSE_KEY_REVOKED = { code: 1008, reason: "key revoked" } as const;
export const CLOSE_BUDGET = { code: 1008, reason: "budget_exceeded" } as const;

/** One open stream as the registry governs it (src/gateway/ws/session.ts implements it). */
export interface GovernedStream {
  /** Frames relayed so far in both directions (the idle clock reads it; 0 before the vendor opens). */
  frames(): number;
  /** Ends the stream from the gateway's side (recorded up to here). */
  end(code: number, reason: string): void;
}

/**
 * A stream's claim on one of its key's slots, taken at the upgrade before any vendor is contacted
 * (so a burst of upgrades cannot pass the cap while their vendor sockets open). `attach` makes it an
 * open stream (idle, duration and revocation watched); `release` frees the slot, once.
 */
export interface StreamSlot {
  attach(stream: GovernedStream): void;
  release(): void;
}

/** Live failovers counted for one route and provider pair. */
export interface StreamFailovers {
  route: string;
  from: string;
  to: string;
  count: number;
}

interface Entry {
  stream: GovernedStream;
  keyId: string;
  tenantId: string | null;
  /** The presented token, kept in memory only to verify it again (never logged, never recorded). */
  token: string | null;
  checkRevocation: boolean;
  openedAt: number;
  lastFrames: number;
  activeAt: number;
}

/** How often a revoked key's streams are looked for at most (a vk_ key's revoked_at is re-read once a second). */
const REVOCATION_CHECK_MS = 1_000;

/**
 * The open streams of this process, per key and per tenant: the per-key cap at the upgrade, the
 * open-streams gauge, and one sweep (not a timer per stream) that ends idle streams, streams past
 * their maximum duration, and the streams of a key that no longer verifies (revoked on any replica:
 * the key check re-reads revocation from the store; a static key gone from the configuration).
 */
export class StreamRegistry {
  private readonly claims = new Map<string, number>();
  private readonly open = new Set<Entry>();
  private readonly tenants = new Map<string | null, number>();
  /** Live failovers since this process started, per route and provider pair. */
  private readonly failoverCounts = new Map<string, StreamFailovers>();
  private timer: NodeJS.Timeout | null = null;
  private verifying = false;
  private verifiedAt = Number.NEGATIVE_INFINITY;

  constructor(
    readonly limits: StreamLimits,
    private readonly verify: (token: string | null) => Promise<AuthContext>,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /** A slot for one more stream of this key, or null when the key has max_per_key open already. */
  claim(auth: AuthContext, token: string | null): StreamSlot | null {
    const keyId = auth.actor;
    const held = this.claims.get(keyId) ?? 0;
    if (held >= this.limits.maxPerKey) return null;
    this.claims.set(keyId, held + 1);
    let entry: Entry | null = null;
    let released = false;
    return {
      attach: (stream) => {
        if (released || entry) return;
        const t = this.now();
        entry = { stream, keyId, tenantId: auth.tenantId, token, checkRevocation: auth.kind !== "none", openedAt: t, lastFrames: 0, activeAt: t };
        this.open.add(entry);
        this.tenants.set(auth.tenantId, (this.tenants.get(auth.tenantId) ?? 0) + 1);
      },
      release: () => {
        if (released) return;
        released = true;
        const left = (this.claims.get(keyId) ?? 1) - 1;
        if (left > 0) this.claims.set(keyId, left);
        else this.claims.delete(keyId);
        if (entry && this.open.delete(entry)) {
          const n = (this.tenants.get(entry.tenantId) ?? 1) - 1;
          if (n > 0) this.tenants.set(entry.tenantId, n);
          else this.tenants.delete(entry.tenantId);
        }
      },
    };
  }

  /** Open streams per tenant (null: keys without a tenant), for the /v1/metrics gauge. */
  openPerTenant(): ReadonlyMap<string | null, number> {
    return this.tenants;
  }

  /** One live failover of a stream on `route` from provider `from` to `to` (voxgate_gateway_stream_failovers_total). */
  countFailover(route: string, from: string, to: string): void {
    const key = `${route}\u0000${from}\u0000${to}`;
    const c = this.failoverCounts.get(key);
    if (c) c.count++;
    else this.failoverCounts.set(key, { route, from, to, count: 1 });
  }

  failovers(): Iterable<StreamFailovers> {
    return this.failoverCounts.values();
  }

  /** Streams currently open on this replica. */
  get size(): number {
    return this.open.size;
  }

  start(): void {
    if (this.timer) return;
    const l = this.limits;
    // Fine enough for the shortest limit (a quarter of it), never busier than every 20 ms.
    const every = Math.max(20, Math.min(1_000, l.idleMs / 4, l.maxDurationMs / 4));
    this.timer = setInterval(() => void this.sweep(), every);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  /** One pass: idle and duration limits, then (at most once a second) the keys of open streams. */
  async sweep(): Promise<void> {
    const t = this.now();
    const { idleMs, maxDurationMs } = this.limits;
    for (const e of [...this.open]) {
      const frames = e.stream.frames();
      if (frames !== e.lastFrames) {
        e.lastFrames = frames;
        e.activeAt = t;
      }
      if (t - e.openedAt >= maxDurationMs) e.stream.end(CLOSE_MAX_DURATION.code, CLOSE_MAX_DURATION.reason);
      else if (t - e.activeAt >= idleMs) e.stream.end(CLOSE_IDLE.code, CLOSE_IDLE.reason);
    }
    if (this.verifying || t - this.verifiedAt < REVOCATION_CHECK_MS) return;
    this.verifying = true;
    this.verifiedAt = t;
    try {
      await this.endRevoked();
    } finally {
      this.verifying = false;
    }
  }

  /** Verifies each distinct key of the open streams once; ends the streams of a key that no longer verifies. */
  private async endRevoked(): Promise<void> {
    const byToken = new Map<string | null, Entry[]>();
    for (const e of this.open) {
      if (!e.checkRevocation) continue;
      const list = byToken.get(e.token);
      if (list) list.push(e);
      else byToken.set(e.token, [e]);
    }
    for (const [token, entries] of byToken) {
      let auth: AuthContext | null = null;
      try {
        auth = await this.verify(token);
      } catch {
        continue; // the store is unreachable: keep the streams, try again next sweep
      }
      for (const e of entries) if (auth.actor !== e.keyId) e.stream.end(CLOSE_KEY_REVOKED.code, CLOSE_KEY_REVOKED.reason);
    }
  }
}
