import type { Logger } from "../logging.js";
import type { GatewayRecord, RecordSink } from "./recorder.js";

/** Turns written gateway records into exported spans (src/gateway/genai-spans.ts, loaded on demand). */
export interface SpanWriter {
  /** Queues one span per record; never throws for a record it cannot map, never waits for the network. */
  write(batch: readonly GatewayRecord[]): void;
  flush(): Promise<void>;
  shutdown(): Promise<void>;
}

/**
 * A record sink that also exports each record as a span, after the inner sink took the batch (a batch
 * the inner sink refused is re-queued by the recorder and would otherwise be exported twice). The
 * writer is loaded when the sink is built, by a dynamic import, so a process without the OTel
 * variables never loads the SDK; spans are made on the recorder's flush, never on a call's path.
 * An export failure never fails the write: the records are what counts.
 */
export function spanSink(inner: RecordSink, load: () => Promise<SpanWriter>, log: Logger): RecordSink {
  const writer = load().catch((err: unknown) => {
    log.error({ err: (err as Error).message }, "span export off: the OpenTelemetry SDK could not be loaded");
    return null;
  });
  return {
    async write(batch) {
      await inner.write(batch);
      const w = await writer;
      try {
        w?.write(batch);
      } catch (err) {
        log.warn({ err: (err as Error).message, records: batch.length }, "gateway calls not exported as spans");
      }
    },
    async flush() {
      await inner.flush?.();
      await (await writer)?.flush();
    },
    async close() {
      await inner.close?.();
      await (await writer)?.shutdown();
    },
  };
}
