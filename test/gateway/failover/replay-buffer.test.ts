import { describe, expect, it } from "vitest";
import { ReplayBuffer } from "../../../src/gateway/failover/replay-buffer.js";

const frame = (n: number, fill: number) => Buffer.alloc(n, fill);

describe("ReplayBuffer", () => {
  it("replays the frames after the last final, whole frames from the one that straddles it", () => {
    const b = new ReplayBuffer(10_000);
    for (let i = 0; i < 5; i++) b.append(frame(100, i));
    b.finalizedUpTo(250); // the middle of frame 2
    const p = b.pending();
    expect(p.startOffset).toBe(200);
    expect(p.frames.map((f) => f[0])).toEqual([2, 3, 4]);
    expect(b.receivedBytes).toBe(500);
  });

  it("places frames by the audio they carry, not their size (OpenAI's base64 appends)", () => {
    const b = new ReplayBuffer(10_000);
    for (let i = 0; i < 4; i++) b.append(frame(140, i), 100);
    b.finalizedUpTo(200);
    const p = b.pending();
    expect(p.startOffset).toBe(200);
    expect(p.frames.map((f) => [f[0], f.length])).toEqual([
      [2, 140],
      [3, 140],
    ]);
    expect(b.receivedBytes).toBe(400);
  });

  it("keeps at most its capacity, dropping the oldest audio first", () => {
    const b = new ReplayBuffer(250);
    for (let i = 0; i < 5; i++) b.append(frame(100, i));
    const p = b.pending();
    expect(p.frames.map((f) => f[0])).toEqual([3, 4]);
    expect(p.startOffset).toBe(300);
  });

  it("never moves the final mark backwards or past what was received", () => {
    const b = new ReplayBuffer(1_000);
    b.append(frame(100, 0));
    b.finalizedUpTo(80);
    b.finalizedUpTo(40);
    expect(b.finalizedBytes).toBe(80);
    b.finalizedUpTo(10_000);
    expect(b.finalizedBytes).toBe(100);
    expect(b.pending()).toEqual({ startOffset: 100, frames: [] });
  });
});
