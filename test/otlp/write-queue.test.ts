import { describe, expect, it } from "vitest";
import { emptyWriteQueue, LINGER_MS, MAX_GROUP_SPANS, queueWrite } from "../../src/otlp/write-queue.js";

/** A write that records each group and finishes when the test says so. */
function writes() {
  const groups: string[][] = [];
  const finish: (() => void)[] = [];
  const write = (jobs: string[]) =>
    new Promise<string[]>((resolve) => {
      groups.push(jobs);
      finish.push(() => resolve(jobs.map((j) => `${j} written`)));
    });
  return { groups, finish, write };
}

const tick = (ms = 0) => new Promise((r) => setTimeout(r, ms));

describe("the OTLP write queue (group commit)", () => {
  it("writes an export at once when no writer is busy, and answers each job its own result", async () => {
    const q = emptyWriteQueue<string, string>();
    const w = writes();
    const a = queueWrite(q, "a", null, 511, w.write);
    expect(w.groups).toEqual([["a"]]);
    w.finish[0]?.();
    expect(await a).toBe("a written");
  });

  it("exports arriving while a writer is busy, and in its linger after, are written together by it", async () => {
    const q = emptyWriteQueue<string, string>();
    const w = writes();
    const a = queueWrite(q, "a", "t", 511, w.write);
    const b = queueWrite(q, "b", "t", 511, w.write);
    const c = queueWrite(q, "c", "t", 511, w.write);
    expect(w.groups).toEqual([["a"]]); // under half a group waits: no second writer
    w.finish[0]?.();
    expect(await a).toBe("a written");
    const d = queueWrite(q, "d", "t", 511, w.write); // the answered exporter's next export, within the linger
    await tick(LINGER_MS + 5);
    expect(w.groups).toEqual([["a"], ["b", "c", "d"]]);
    w.finish[1]?.();
    expect(await Promise.all([b, c, d])).toEqual(["b written", "c written", "d written"]);
  });

  it("a second writer starts for half a group or more; tenants are never mixed in a group", async () => {
    const q = emptyWriteQueue<string, string>();
    const w = writes();
    void queueWrite(q, "a", "t", 100, w.write);
    void queueWrite(q, "x", "other", 100, w.write);
    void queueWrite(q, "b", "t", MAX_GROUP_SPANS / 2, w.write);
    // b's arrival makes half a group wait: a second writer takes the first waiting export's tenant (x alone).
    expect(w.groups).toEqual([["a"], ["x"]]);
    w.finish[0]?.();
    w.finish[1]?.();
    await tick(LINGER_MS + 5);
    expect(w.groups).toEqual([["a"], ["x"], ["b"]]);
  });
});
