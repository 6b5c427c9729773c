import type { Db } from "../db/client.js";
import { isDataError } from "../db/errors.js";
import type { Logger } from "../logging.js";
import type { Worker } from "../worker.js";
import { DRAIN_DEADLINE_MS, FLUSH_BATCH, FLUSH_RETRY_MAX_MS, FLUSH_RETRY_MIN_MS, OBSERVATION_QUEUE_LIMIT } from "./limits.js";
import { observationToUpdate, type QueuedObservation } from "./observation.js";
import { applyCallUpdates } from "./upsert.js";

/** The counters both answers of POST /v1/calls/observations carry. */
export interface QueueCounters {
  /** Reports accepted into the queue since start. */
  queued: number;
  /** Reports refused because the queue was full (429) since start. */
  dropped: number;
  /** Reports waiting to be written now. */
  queue_depth: number;
}

export interface ObservationQueueOptions {
  db: Db;
  log: Logger;
  loadtestTrunks: ReadonlySet<string>;
  limit?: number;
  /** Start with the flusher paused (tests fill the queue deterministically, then resume()). */
  paused?: boolean;
}

/**
 * Bounded in-memory queue of validated observation reports and the background flusher that writes them
 * with the same upserts as the webhook. Full → the newest report is refused. A database failure keeps the
 * report at the head and retries with exponential backoff (logged); a report the database refuses as
 * data (SQLSTATE class 22/23) is logged with its content and dropped so it cannot block the queue.
 * stop() drains everything (shutdown, SIGTERM).
 */
export class ObservationQueue implements Worker {
  readonly name = "call-observations";
  readonly limit: number;
  private readonly items: QueuedObservation[] = [];
  private queuedTotal = 0;
  private droppedTotal = 0;
  private writtenTotal = 0;
  private failedTotal = 0;
  private paused: boolean;
  private running: Promise<void> | null = null;
  private retryTimer: NodeJS.Timeout | null = null;
  private retryWait: Promise<void> | null = null;
  private retriesTotal = 0;
  private retryDelay = FLUSH_RETRY_MIN_MS;
  private stopping = false;

  constructor(private readonly opts: ObservationQueueOptions) {
    this.limit = opts.limit ?? OBSERVATION_QUEUE_LIMIT;
    this.paused = opts.paused ?? false;
  }

  counters(): QueueCounters {
    return { queued: this.queuedTotal, dropped: this.droppedTotal, queue_depth: this.items.length };
  }

  /** Written and permanently failed totals (metrics, tests). */
  stats() {
    return { ...this.counters(), written: this.writtenTotal, failed: this.failedTotal, retries: this.retriesTotal };
  }

  /** Adds a report; false (and counted as dropped) when the queue is full or shutting down. */
  offer(item: QueuedObservation): boolean {
    if (this.stopping || this.items.length >= this.limit) {
      this.droppedTotal++;
      return false;
    }
    this.items.push(item);
    this.queuedTotal++;
    this.kick();
    return true;
  }

  pause(): void {
    this.paused = true;
  }

  resume(): void {
    this.paused = false;
    this.kick();
  }

  /** False once shutdown has begun: the route answers 503 instead of queueing. */
  get accepting(): boolean {
    return !this.stopping;
  }

  /**
   * Resolves once the queue is empty or paused, waiting through database retries (tests use it to
   * observe the flusher's work without sleeping; never resolves while the database stays down).
   */
  async flushed(): Promise<void> {
    for (;;) {
      this.kick();
      if (this.running) await this.running;
      else if (this.retryWait) await this.retryWait;
      else return;
    }
  }

  /** Shutdown: refuse new reports, write every queued one (retrying until the drain deadline). */
  async stop(): Promise<void> {
    this.stopping = true;
    this.paused = false;
    this.cancelRetryTimer();
    if (this.running) await this.running;
    const deadline = Date.now() + DRAIN_DEADLINE_MS;
    while (this.items.length > 0 && Date.now() < deadline) {
      if ((await this.drain()) === "retry") {
        await new Promise((r) => setTimeout(r, Math.min(this.retryDelay, Math.max(0, deadline - Date.now()))));
      }
    }
    if (this.items.length > 0) {
      this.opts.log.error({ lost: this.items.length }, "call observations could not be written before shutdown");
    } else {
      this.opts.log.info({ written: this.writtenTotal }, "call observation queue drained");
    }
  }

  private kick(): void {
    if (this.running || this.paused || this.stopping || this.retryTimer || this.items.length === 0) return;
    this.running = this.drain().then((outcome) => {
      this.running = null;
      if (outcome === "retry" && !this.stopping) {
        this.retryWait = new Promise<void>((resolve) => {
          this.retryResolve = resolve;
          this.retryTimer = setTimeout(() => {
            this.retryTimer = null;
            this.retryWait = null;
            resolve();
            this.kick();
          }, this.retryDelay);
          this.retryTimer.unref();
        });
      }
    });
  }

  private retryResolve: (() => void) | null = null;

  private cancelRetryTimer(): void {
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.retryTimer = null;
    this.retryWait = null;
    this.retryResolve?.();
    this.retryResolve = null;
  }

  /**
   * Writes from the head, FLUSH_BATCH reports per transaction, until empty or paused; "retry" after a
   * transient database failure. After a failed batch it goes one report at a time, so a report the
   * database refuses as data is found, logged and dropped without losing its neighbours.
   */
  private async drain(): Promise<"done" | "retry"> {
    let batchSize = FLUSH_BATCH;
    while (this.items.length > 0 && !this.paused) {
      const chunk = this.items.slice(0, batchSize);
      try {
        const results = await applyCallUpdates(this.opts.db, chunk.map(observationToUpdate), { loadtestTrunks: this.opts.loadtestTrunks });
        results.forEach((result, i) => {
          const item = chunk[i];
          if (result === "foreign" && item) {
            this.opts.log.warn({ room_sid: item.report.room_sid, tenant_id: item.tenantId }, "observation for a call of another tenant ignored");
          }
        });
        this.writtenTotal += chunk.length;
        this.retryDelay = FLUSH_RETRY_MIN_MS;
        this.items.splice(0, chunk.length);
      } catch (err) {
        if (batchSize > 1) {
          batchSize = 1;
          continue;
        }
        const head = chunk[0];
        if (isDataError(err)) {
          this.failedTotal++;
          this.items.shift();
          this.opts.log.error({ err, report: head?.report, tenant_id: head?.tenantId }, "call observation refused by the database; dropped");
          continue;
        }
        this.retriesTotal++;
        this.opts.log.warn({ err, queue_depth: this.items.length, retry_in_ms: this.retryDelay }, "call observation flush failed; will retry");
        this.retryDelay = Math.min(this.retryDelay * 2, FLUSH_RETRY_MAX_MS);
        return "retry";
      }
    }
    return "done";
  }
}
