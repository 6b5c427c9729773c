/**
 * A streaming resampler for 16-bit little-endian mono PCM (Deepgram's `linear16`, OpenAI realtime's
 * `pcm16`), by linear interpolation. Speech recognisers band-limit their own input, so the aliasing a
 * windowed-sinc filter would remove costs nothing measurable in transcripts; what matters on a live
 * leg is that chunked input gives exactly the samples the whole input would (state across pushes).
 */
export class PcmResampler {
  /** Output samples emitted so far: output k sits at input position k·from/to (kept exact in integers, so chunking never changes a sample). */
  private emitted = 0;
  /** Input samples consumed before the current chunk. */
  private consumed = 0;
  /** The last sample of the previous chunk (interpolation across the boundary); null before any. */
  private prev: number | null = null;
  /** An odd byte left over when a frame splits a sample. */
  private carry: Buffer | null = null;

  constructor(
    readonly fromRate: number,
    readonly toRate: number,
  ) {
    if (!(Number.isInteger(fromRate) && Number.isInteger(toRate) && fromRate > 0 && toRate > 0)) throw new RangeError("sample rates must be positive integers");
  }

  /** Resampled bytes for this chunk of input (any length; a split sample waits for the next chunk). */
  push(chunk: Buffer): Buffer {
    let bytes = this.carry ? Buffer.concat([this.carry, chunk]) : chunk;
    this.carry = null;
    if (bytes.length % 2 === 1) {
      this.carry = Buffer.from(bytes.subarray(bytes.length - 1));
      bytes = bytes.subarray(0, bytes.length - 1);
    }
    const n = bytes.length / 2;
    if (n === 0) return Buffer.alloc(0);
    if (this.fromRate === this.toRate) return Buffer.from(bytes);
    const { fromRate: from, toRate: to } = this;
    const at = (i: number): number => (i < 0 ? (this.prev ?? bytes.readInt16LE(0)) : bytes.readInt16LE(i * 2));
    const out = Buffer.allocUnsafe((Math.ceil((n * to) / from) + 2) * 2);
    let written = 0;
    for (;;) {
      // Position of output `emitted` relative to this chunk, as i + rem/to input samples.
      const num = this.emitted * from - this.consumed * to;
      const i = Math.floor(num / to);
      const rem = num - i * to;
      // Between the chunk's last sample and the next chunk's first: wait for it.
      if (i > n - 1 || (rem !== 0 && i + 1 > n - 1)) break;
      const v = rem === 0 ? at(i) : (at(i) * (to - rem) + at(i + 1) * rem) / to;
      out.writeInt16LE(Math.max(-32768, Math.min(32767, Math.round(v))), written);
      written += 2;
      this.emitted++;
    }
    this.consumed += n;
    this.prev = bytes.readInt16LE((n - 1) * 2);
    return out.subarray(0, written);
  }

  /**
   * The input has ended: the outputs that sit past its last sample (a push holds them back for the
   * next chunk) are emitted holding that sample, so the whole output is ceil(input · to / from)
   * samples, the length the input's duration has at the new rate.
   */
  flush(): Buffer {
    const prev = this.prev;
    if (prev === null) return Buffer.alloc(0);
    let n = 0;
    while ((this.emitted + n) * this.fromRate < this.consumed * this.toRate) n++;
    this.emitted += n;
    const out = Buffer.allocUnsafe(n * 2);
    for (let k = 0; k < n; k++) out.writeInt16LE(prev, k * 2);
    return out;
  }
}

/** Bytes of 16-bit mono PCM at `rate` for `seconds` of audio. */
export const pcm16Bytes = (seconds: number, rate: number): number => Math.round(seconds * rate) * 2;
