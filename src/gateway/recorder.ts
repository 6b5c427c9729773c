import type { TypedRecord } from "../ingest/records.js";
import type { Logger } from "../logging.js";

/**
 * One gateway call as recorded: a request record (the fields of POST /v1/ingest, built typed: the
 * local sink stores it through ingest's typed entry, with no wire-format parse) plus the caller's
 * tenant (from the key).
 */
export interface GatewayRecord {
  tenantId: string | null;
  record: TypedRecord;
  /** Set only when the gateway exports its calls as spans (src/gateway/span-sink.ts). */
  trace?: CallTrace;
}

/** What a call's span needs beyond its record: the caller's W3C trace context and the vendor's wire type. */
export interface CallTrace {
  /** The caller's `traceparent` / `tracestate` headers, as sent (validated when the span is made). */
  traceparent: string | null;
  tracestate: string | null;
  providerType: string;
  /** The model name the vendor was asked for (the record's model_id is Voxgate's catalog id). */
  model: string;
}

/** Where records go: the local store (through the ingest path) or a collector (voxgate/client). */
export interface RecordSink {
  /** Writes one batch; resolves when it is durable (local) or handed to the client (sidecar). */
  write(batch: GatewayRecord[]): Promise<void>;
  close?(): Promise<void>;
  /** Pushes out what the sink buffers itself (exported spans); the recorder's flush() ends with it. */
  flush?(): Promise<void>;
}

/** Told when records are queued and when they became durable (the budget tracker listens). */
export interface RecordObserver {
  queued(rec: GatewayRecord): void;
  written(batch: readonly GatewayRecord[], committedAt: number): void;
}

/**
 * Most records per write (one ingest transaction). Each transaction has a fixed cost in Postgres (the
 * rollup upserts, the commit) that dwarfs a row's: at 3,000 calls/s, writing a tick's records as one
 * transaction instead of batches of 500 cut Postgres CPU per call 0.060 -> 0.039 ms.
 */
export const RECORD_BATCH_SIZE = 2000;
/** The flusher's cadence when fewer than a batch are waiting. */
export const RECORD_FLUSH_INTERVAL_MS = 200;

/** Written attempts per provider and status, since this process started (/v1/metrics' error rate). */
export type AttemptCounts = Map<string, Record<"success" | "error" | "fallback", number>>;

export interface RecorderStats {
  queued: number;
  written: number;
  /** Records refused because the queue was full (counted in /v1/metrics). */
  dropped: number;
  /** Batches whose write failed (retried later while the queue has room). */
  failedWrites: number;
}

/**
 * The gateway's recorder: record() is an O(1) push into a bounded in-memory queue, called after the
 * answer went out, so the caller never waits for the database. A background flusher writes batches
 * of RECORD_BATCH_SIZE through the sink; a failed batch goes back to the head of the queue (bounded:
 * beyond `limit` records new ones are dropped and counted). stop() drains what is queued.
 */
export class GatewayRecorder {
  readonly name = "gateway-recorder";
  private queue: GatewayRecord[] = [];
  private written = 0;
  private dropped = 0;
  private failedWrites = 0;
  /** Counted when a batch is written (on the flusher, never on a call's path). */
  private readonly attempts: AttemptCounts = new Map();
  private flushing: Promise<boolean> | null = null;
  private timer: NodeJS.Timeout | null = null;
  private scheduled = false;
  private stopped = false;

  constructor(
    private readonly sink: RecordSink,
    private readonly opts: { limit: number; log: Logger; observer?: RecordObserver },
  ) {}

  start(): void {
    this.timer ??= setInterval(() => void this.tick(), RECORD_FLUSH_INTERVAL_MS);
    this.timer.unref();
  }

  record(tenantId: string | null, record: TypedRecord, trace?: CallTrace): void {
    if (this.queue.length >= this.opts.limit || this.stopped) {
      this.dropped++;
      return;
    }
    const rec: GatewayRecord = trace === undefined ? { tenantId, record } : { tenantId, record, trace };
    this.queue.push(rec);
    this.opts.observer?.queued(rec);
    if (this.queue.length >= RECORD_BATCH_SIZE && !this.scheduled && !this.flushing) {
      this.scheduled = true;
      setImmediate(() => {
        this.scheduled = false;
        void this.tick();
      });
    }
  }

  stats(): RecorderStats {
    return { queued: this.queue.length, written: this.written, dropped: this.dropped, failedWrites: this.failedWrites };
  }

  /** Written attempts per provider id (the routing table's, a bounded set) and status. */
  attemptCounts(): ReadonlyMap<string, Readonly<Record<"success" | "error" | "fallback", number>>> {
    return this.attempts;
  }

  private count(batch: readonly GatewayRecord[]): void {
    for (const { record } of batch) {
      const provider = record.provider ?? "";
      const c = this.attempts.get(provider) ?? { success: 0, error: 0, fallback: 0 };
      this.attempts.set(provider, c);
      c[record.status ?? "success"]++;
    }
  }

  /** Writes everything queued, including what arrives meanwhile; a failing sink leaves the rest queued. */
  async flush(): Promise<void> {
    for (;;) {
      if (this.flushing) {
        if (!(await this.flushing)) return;
        continue;
      }
      if (this.queue.length === 0) return this.sink.flush?.();
      if (!(await this.tick())) return;
    }
  }

  /**
   * One flush (one at a time): the records queued when it starts, not those arriving while it writes.
   * Those wait for the next tick (or a full batch), so batches stay large under load: chasing the
   * arrivals wrote ~30-record batches back to back at 3,000 calls/s, and a transaction's fixed cost
   * (the rollup upserts) made Postgres spend 0.24 ms of CPU per call instead of ~0.05.
   */
  private tick(): Promise<boolean> {
    this.flushing ??= this.writeQueued(this.queue.length).finally(() => {
      this.flushing = null;
      // A full batch gathered while writing goes now, not at the next tick.
      if (this.queue.length >= RECORD_BATCH_SIZE && !this.stopped) setImmediate(() => void this.tick());
    });
    return this.flushing;
  }

  /** Writes up to `count` queued records in batches; false when the sink failed (the batch is re-queued). */
  private async writeQueued(count: number): Promise<boolean> {
    let left = count;
    while (left > 0 && this.queue.length > 0) {
      const batch = this.queue.splice(0, Math.min(RECORD_BATCH_SIZE, left));
      left -= batch.length;
      try {
        await this.sink.write(batch);
        this.written += batch.length;
        this.count(batch);
        this.opts.observer?.written(batch, Date.now());
      } catch (err) {
        this.failedWrites++;
        this.opts.log.warn({ err: (err as Error).message, records: batch.length }, "gateway records not written; kept for the next flush");
        // Back to the head, within the bound (the oldest beyond it are dropped and counted).
        const room = Math.max(0, this.opts.limit - this.queue.length);
        this.dropped += Math.max(0, batch.length - room);
        this.queue = batch.slice(0, room).concat(this.queue);
        return false;
      }
    }
    return true;
  }

  /** Stops the timer and drains: tries until the queue is empty or `timeoutMs` passed. */
  async stop(timeoutMs = 10_000): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    const deadline = Date.now() + timeoutMs;
    while (this.queue.length > 0 && Date.now() < deadline) {
      await this.flush();
      if (this.queue.length > 0) await new Promise((r) => setTimeout(r, 100));
    }
    if (this.queue.length > 0) {
      this.dropped += this.queue.length;
      this.opts.log.error({ records: this.queue.length }, "gateway records lost at shutdown: the store did not accept them in time");
      this.queue = [];
    }
    this.stopped = true;
    await this.sink.close?.();
  }
}
