import type { Db } from "../db/client.js";
import type { CallUpdate } from "./model.js";
import { type ApplyOptions, type ApplyResult, applyCallUpdates } from "./upsert.js";

/**
 * Batches in flight at once (each holds one pooled connection; the pool has 10). Few, so bursts form
 * larger groups: a group of events on distinct rooms is ONE statement (applyCallUpdates). bench:webhook
 * measured 2 best (8: ~2.1k, 4: ~2.3k, 2: ~2.4-2.5k, 1: ~2.4k events/s).
 */
const MAX_BATCHES_IN_FLIGHT = 2;
/** Largest group committed together. */
const MAX_BATCH = 64;

interface Pending {
  update: CallUpdate;
  resolve: (r: ApplyResult) => void;
  reject: (err: unknown) => void;
}

/**
 * Group commit for webhook writes. Each request still waits until its event is durable, but events that
 * arrive while earlier batches are committing share the next transaction, so a burst costs one WAL
 * flush per batch instead of one per event. With no contention a batch is a single event (no added latency).
 * If a batch fails, its events are retried one by one so one bad event cannot fail its neighbours.
 */
export class CallWriter {
  private readonly pending: Pending[] = [];
  private inFlight = 0;

  constructor(
    private readonly db: Db,
    private readonly opts: ApplyOptions,
  ) {}

  write(update: CallUpdate): Promise<ApplyResult> {
    return new Promise<ApplyResult>((resolve, reject) => {
      this.pending.push({ update, resolve, reject });
      this.pump();
    });
  }

  private pump(): void {
    while (this.inFlight < MAX_BATCHES_IN_FLIGHT && this.pending.length > 0) {
      const batch = this.pending.splice(0, MAX_BATCH);
      this.inFlight++;
      void this.commit(batch).finally(() => {
        this.inFlight--;
        this.pump();
      });
    }
  }

  private async commit(batch: Pending[]): Promise<void> {
    try {
      const results = await applyCallUpdates(
        this.db,
        batch.map((p) => p.update),
        this.opts,
      );
      for (const [i, p] of batch.entries()) p.resolve(results[i] ?? "recorded");
      return;
    } catch (err) {
      if (batch.length === 1) {
        batch[0]?.reject(err);
        return;
      }
    }
    for (const p of batch) {
      await applyCallUpdates(this.db, [p.update], this.opts).then(
        (r) => p.resolve(r[0] ?? "recorded"),
        (err: unknown) => p.reject(err),
      );
    }
  }
}
