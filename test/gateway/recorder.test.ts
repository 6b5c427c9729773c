import { describe, expect, it } from "vitest";
import { GatewayRecorder, type GatewayRecord, RECORD_BATCH_SIZE, type RecordSink } from "../../src/gateway/recorder.js";
import type { TypedRecord } from "../../src/ingest/records.js";
import { silentLogger } from "../../src/logging.js";

/** A sink whose writes finish when the test says so. */
function heldSink() {
  const batches: GatewayRecord[][] = [];
  let release: () => void = () => {};
  const sink: RecordSink = {
    write(batch) {
      batches.push(batch);
      return new Promise<void>((r) => {
        release = r;
      });
    },
  };
  return { sink, batches, release: () => release() };
}

const record = (i: number): TypedRecord => ({ id: `r${i}`, timestamp: Date.now(), modality: "llm", model_id: "openai/gpt-4.1-mini", provider: "openai" });
const turn = () => new Promise((r) => setImmediate(r));

describe("GatewayRecorder batching", () => {
  it("leaves records that arrive during a write for the next flush, so batches stay full under load", async () => {
    const { sink, batches, release } = heldSink();
    const rec = new GatewayRecorder(sink, { limit: 10_000, log: silentLogger });
    for (let i = 0; i < RECORD_BATCH_SIZE; i++) rec.record(null, record(i));
    await turn();
    expect(batches.map((b) => b.length)).toEqual([RECORD_BATCH_SIZE]);
    for (let i = 0; i < 10; i++) rec.record(null, record(1000 + i));
    release();
    await turn();
    await turn();
    // The 10 late records were not written as a batch of their own right after the first.
    expect(batches.length).toBe(1);
    expect(rec.stats()).toMatchObject({ queued: 10, written: RECORD_BATCH_SIZE });
  });

  it("flush() still writes everything, including records queued while it runs", async () => {
    const { sink, batches, release } = heldSink();
    const rec = new GatewayRecorder(sink, { limit: 10_000, log: silentLogger });
    rec.record(null, record(1));
    const done = rec.flush();
    await turn();
    rec.record(null, record(2));
    release();
    await turn();
    release();
    await done;
    expect(batches.map((b) => b.map((r) => r.record.id))).toEqual([["r1"], ["r2"]]);
    expect(rec.stats()).toMatchObject({ queued: 0, written: 2 });
  });
});
