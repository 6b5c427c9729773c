import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { PcmResampler } from "../../../src/gateway/failover/resample.js";

function sine(hz: number, rate: number, seconds: number): Buffer {
  const n = Math.round(rate * seconds);
  const b = Buffer.alloc(n * 2);
  for (let i = 0; i < n; i++) b.writeInt16LE(Math.round(12000 * Math.sin((2 * Math.PI * hz * i) / rate)), i * 2);
  return b;
}

/** Zero crossings per second, a frequency estimate that needs no FFT. */
function crossingsPerSecond(pcm: Buffer, rate: number): number {
  let crossings = 0;
  for (let i = 1; i < pcm.length / 2; i++) if (pcm.readInt16LE((i - 1) * 2) < 0 !== pcm.readInt16LE(i * 2) < 0) crossings++;
  return crossings / (pcm.length / 2 / rate);
}

describe("PcmResampler", () => {
  it("keeps a tone's pitch and the audio's duration from 16 kHz to 24 kHz and back", () => {
    const input = sine(440, 16_000, 1);
    const up = new PcmResampler(16_000, 24_000).push(input);
    expect(up.length / 2).toBeGreaterThanOrEqual(23_990);
    expect(up.length / 2).toBeLessThanOrEqual(24_000);
    expect(crossingsPerSecond(up, 24_000)).toBeCloseTo(880, -1);
    const down = new PcmResampler(24_000, 16_000).push(up);
    expect(Math.abs(down.length / 2 - 16_000)).toBeLessThanOrEqual(2);
    expect(crossingsPerSecond(down, 16_000)).toBeCloseTo(880, -1);
  });

  it("gives the same samples whatever the chunking, odd byte splits included", () => {
    fc.assert(
      fc.property(
        fc.constantFrom([8_000, 24_000], [16_000, 24_000], [24_000, 16_000], [48_000, 24_000], [44_100, 24_000]),
        fc.array(fc.integer({ min: 1, max: 997 }), { minLength: 1, maxLength: 40 }),
        ([from, to], cuts) => {
          const input = sine(300, from as number, 0.2);
          const whole = new PcmResampler(from as number, to as number).push(input);
          const r = new PcmResampler(from as number, to as number);
          const parts: Buffer[] = [];
          let at = 0;
          for (const c of cuts) {
            if (at >= input.length) break;
            parts.push(r.push(input.subarray(at, at + c)));
            at += c;
          }
          parts.push(r.push(input.subarray(at)));
          expect(Buffer.concat(parts).equals(whole)).toBe(true);
        },
      ),
      { numRuns: 200 },
    );
  });

  it("flush() completes the output to the input's duration at the new rate, whatever the chunking", () => {
    fc.assert(
      fc.property(
        fc.constantFrom([8_000, 24_000], [16_000, 24_000], [24_000, 16_000], [44_100, 24_000]),
        fc.array(fc.integer({ min: 1, max: 4_000 }), { minLength: 1, maxLength: 12 }),
        ([from, to], cuts) => {
          const r = new PcmResampler(from as number, to as number);
          let inSamples = 0;
          let outBytes = 0;
          for (const c of cuts) {
            outBytes += r.push(sine(300, from as number, c / (from as number))).length;
            inSamples += c;
          }
          outBytes += r.flush().length;
          expect(outBytes / 2).toBe(Math.ceil((inSamples * (to as number)) / (from as number)));
        },
      ),
      { numRuns: 200 },
    );
    expect(new PcmResampler(16_000, 24_000).flush().length).toBe(0);
  });

  it("passes equal rates through and refuses a non-positive rate", () => {
    const input = sine(200, 24_000, 0.01);
    expect(new PcmResampler(24_000, 24_000).push(input).equals(input)).toBe(true);
    expect(() => new PcmResampler(0, 24_000)).toThrow(RangeError);
  });
});
