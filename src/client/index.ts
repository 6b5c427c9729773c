import { randomUUID } from "node:crypto";
import { hostname, totalmem } from "node:os";
import { DropOldestQueue } from "./queue.js";
import { CollectorTransport, SendError } from "./transport.js";
import type { DeadAirEvent, HeartbeatSnapshot, RequestRecord, Turn } from "./types.js";

export type { DeadAirEvent, HeartbeatSnapshot, RequestRecord, Turn } from "./types.js";

/** A record as handed to record(): id and timestamp may be left to the client. */
export type NewRequestRecord = Omit<RequestRecord, "id" | "timestamp"> & Partial<Pick<RequestRecord, "id" | "timestamp">>;
export { SendError } from "./transport.js";

/** The collector's batch cap; a client batch never exceeds it. */
export const COLLECTOR_BATCH_CAP = 1000;

export interface VoxgateClientOptions {
  /** Collector base URL; default env VOXGATE_COLLECTOR_URL. Without one the client is a no-op. */
  collectorUrl?: string;
  /** Bearer key; default env VOXGATE_API_KEY. */
  apiKey?: string;
  /** Environment to read the defaults from (default process.env). */
  env?: NodeJS.ProcessEnv;
  /** Rows held per kind (records, turns, dead-air) before the oldest is dropped. Default 10000. */
  maxBuffer?: number;
  /** Rows per POST, at most 1000. Default 500. */
  batchSize?: number;
  /** Background flush cadence. Default 1000 ms. */
  flushIntervalMs?: number;
  /** This worker's id on the roster; default env VOXGATE_AGENT_ID, else `<hostname>:<pid>`. */
  agentId?: string;
  /** Heartbeat cadence. Default 15000 ms (docs/api/fleet.md); 0 turns heartbeats off. */
  heartbeatIntervalMs?: number;
  /** Fields merged into each heartbeat over the process defaults (status, active_sessions, …). */
  heartbeat?: () => Partial<HeartbeatSnapshot>;
  /** Attempts per batch before it goes back to the buffer. Default 5. */
  maxAttempts?: number;
  /** Backoff: base and cap of the exponential delay (full jitter). Defaults 200 ms and 10 s. */
  retryBaseMs?: number;
  retryMaxMs?: number;
  /** Per-request timeout. Default 10 s. */
  requestTimeoutMs?: number;
  /** Called (never throwing into your code) when a send fails. */
  onError?: (err: Error) => void;
}

export interface ClientStats {
  queued: { records: number; turns: number; dead_air: number };
  sent: { records: number; turns: number; dead_air: number; heartbeats: number };
  /** Rows dropped because a buffer was full (oldest first). */
  dropped: number;
  /** Rows in batches the collector refused with a non-retryable 4xx. */
  rejected: number;
  failedAttempts: number;
}

type Kind = "records" | "turns" | "dead_air";
const PATHS: Record<Kind, string> = { records: "/v1/ingest", turns: "/v1/ingest/turns", dead_air: "/v1/ingest/dead-air" };

/**
 * Agent-side telemetry client: buffers request records, turns and dead-air events in memory and
 * posts them to the collector in batches from a background timer. Nothing it does blocks or throws
 * into the voice loop: record()/turn()/deadAir() are O(1) pushes into bounded buffers.
 */
export class VoxgateClient {
  readonly enabled: boolean;
  /** The agent_id this client heartbeats as (null when disabled). */
  readonly agentId: string | null = null;
  private readonly transport: CollectorTransport | null;
  private readonly queues: Record<Kind, DropOldestQueue<unknown>>;
  private readonly batchSize: number;
  private readonly maxAttempts: number;
  private readonly retryBaseMs: number;
  private readonly retryMaxMs: number;
  private readonly timers: NodeJS.Timeout[] = [];
  private readonly inFlight: Record<Kind, Promise<void> | null> = { records: null, turns: null, dead_air: null };
  private readonly sent = { records: 0, turns: 0, dead_air: 0, heartbeats: 0 };
  private rejected = 0;
  private failedAttempts = 0;
  private closed = false;
  private readonly startedAt = new Date();

  constructor(private readonly options: VoxgateClientOptions = {}) {
    const env = options.env ?? process.env;
    const url = options.collectorUrl ?? (env.VOXGATE_COLLECTOR_URL || undefined);
    const apiKey = options.apiKey ?? (env.VOXGATE_API_KEY || undefined);
    this.batchSize = Math.min(COLLECTOR_BATCH_CAP, Math.max(1, options.batchSize ?? 500));
    this.maxAttempts = Math.max(1, options.maxAttempts ?? 5);
    this.retryBaseMs = options.retryBaseMs ?? 200;
    this.retryMaxMs = options.retryMaxMs ?? 10_000;
    const capacity = options.maxBuffer ?? 10_000;
    this.queues = { records: new DropOldestQueue(capacity), turns: new DropOldestQueue(capacity), dead_air: new DropOldestQueue(capacity) };
    this.enabled = Boolean(url);
    this.transport = url ? new CollectorTransport(url, apiKey, options.requestTimeoutMs ?? 10_000) : null;
    if (!this.transport) return;
    this.agentId = (options.agentId ?? (env.VOXGATE_AGENT_ID || `${hostname()}:${process.pid}`)).slice(0, 256);
    this.every(options.flushIntervalMs ?? 1000, () => void this.flush());
    const heartbeatMs = options.heartbeatIntervalMs ?? 15_000;
    if (heartbeatMs > 0) {
      void this.sendHeartbeat();
      this.every(heartbeatMs, () => void this.sendHeartbeat());
    }
  }

  /** Queues one request record (the fields of docs/api/ingest.md); `id` and `timestamp` are filled in when absent. */
  record(record: NewRequestRecord): void {
    if (!this.enabled || this.closed) return;
    this.enqueue("records", { ...record, id: record.id ?? randomUUID(), timestamp: record.timestamp ?? Date.now() });
  }

  turn(turn: Turn): void {
    this.enqueue("turns", turn);
  }

  deadAir(event: DeadAirEvent): void {
    this.enqueue("dead_air", event);
  }

  /** Sends everything queued now; resolves when each kind's buffer was drained or gave up. */
  async flush(): Promise<void> {
    await Promise.all((Object.keys(PATHS) as Kind[]).map((k) => this.drain(k)));
  }

  /** Stops the timers, flushes what is buffered (bounded by timeoutMs) and closes the connections. */
  async close(timeoutMs = 5000): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const t of this.timers) clearInterval(t);
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([this.flush(), new Promise<void>((r) => (timer = setTimeout(r, timeoutMs)))]);
    clearTimeout(timer);
    await this.transport?.close().catch(() => {});
  }

  stats(): ClientStats {
    const q = this.queues;
    return {
      queued: { records: q.records.length, turns: q.turns.length, dead_air: q.dead_air.length },
      sent: { ...this.sent },
      dropped: q.records.dropped + q.turns.dropped + q.dead_air.dropped,
      rejected: this.rejected,
      failedAttempts: this.failedAttempts,
    };
  }

  /** Posts one heartbeat now (also done every heartbeatIntervalMs). */
  async sendHeartbeat(): Promise<boolean> {
    if (!this.transport || !this.agentId || this.closed) return false;
    const snapshot: HeartbeatSnapshot = {
      agent_id: this.agentId,
      status: "idle",
      host: hostname().slice(0, 256),
      started_at: this.startedAt.toISOString(),
      memory_rss_bytes: process.memoryUsage.rss(),
      memory_total_bytes: totalmem(),
      ts: Date.now(),
      ...safeCall(this.options.heartbeat),
    };
    try {
      await this.transport.post("/v1/agents/heartbeat", snapshot);
      this.sent.heartbeats++;
      return true;
    } catch (err) {
      this.failedAttempts++;
      this.report(err);
      return false;
    }
  }

  private enqueue(kind: Kind, row: unknown): void {
    if (!this.enabled || this.closed) return;
    this.queues[kind].push(row);
    if (this.queues[kind].length >= this.batchSize && !this.inFlight[kind]) setImmediate(() => void this.drain(kind));
  }

  /** One drain per kind at a time; a second caller waits for the running one, then drains again. */
  private drain(kind: Kind): Promise<void> {
    const running = this.inFlight[kind];
    const next = (running ?? Promise.resolve()).then(() => this.drainNow(kind));
    const tracked = next.finally(() => {
      if (this.inFlight[kind] === tracked) this.inFlight[kind] = null;
    });
    this.inFlight[kind] = tracked;
    return tracked;
  }

  private async drainNow(kind: Kind): Promise<void> {
    const queue = this.queues[kind];
    while (this.transport && queue.length > 0) {
      const batch = queue.take(this.batchSize);
      const outcome = await this.sendWithRetry(PATHS[kind], batch);
      if (outcome === "sent") this.sent[kind] += batch.length;
      else if (outcome === "rejected") this.rejected += batch.length;
      else {
        queue.unshift(batch); // the collector is down: keep the rows for the next flush
        return;
      }
      // A partial batch emptied what was queued when it was taken: rows that came in while it was on
      // the wire wait for the next tick (or a full batch), instead of a POST per round trip.
      if (batch.length < this.batchSize) return;
    }
  }

  private async sendWithRetry(path: string, batch: unknown[]): Promise<"sent" | "rejected" | "failed"> {
    for (let attempt = 1; ; attempt++) {
      try {
        await this.transport?.post(path, batch);
        return "sent";
      } catch (err) {
        this.failedAttempts++;
        this.report(err);
        if (err instanceof SendError && !err.retryable) return "rejected";
        if (attempt >= this.maxAttempts || this.closed) return "failed";
        const cap = Math.min(this.retryMaxMs, this.retryBaseMs * 2 ** (attempt - 1));
        await new Promise((r) => setTimeout(r, Math.random() * cap).unref());
      }
    }
  }

  private every(ms: number, fn: () => void): void {
    const t = setInterval(fn, ms);
    t.unref();
    this.timers.push(t);
  }

  private report(err: unknown): void {
    try {
      this.options.onError?.(err instanceof Error ? err : new Error(String(err)));
    } catch {
      // a throwing callback must not break the client
    }
  }
}

function safeCall(fn: (() => Partial<HeartbeatSnapshot>) | undefined): Partial<HeartbeatSnapshot> {
  try {
    return fn?.() ?? {};
  } catch {
    return {};
  }
}
