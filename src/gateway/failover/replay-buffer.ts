/**
 * The client's most recent audio on a live STT stream, kept so that a new vendor leg can be sent what
 * the failed one had heard but not yet finalized. Positions are stream offsets in bytes of the
 * client's audio (what the client sent since the stream opened), so the caller converts vendor
 * timestamps with the stream's bytes per second.
 */
export class ReplayBuffer {
  private frames: { offset: number; frame: Buffer; bytes: number }[] = [];
  private held = 0;
  /** Bytes received on the stream so far. */
  private received = 0;
  /** Everything before this offset was finalized by a vendor (the client has it as a final result). */
  private finalized = 0;

  /** `capacityBytes`: `gateway.streams.replay_seconds` of the stream's audio. */
  constructor(private readonly capacityBytes: number) {}

  /** A client frame carrying `bytes` of audio (the frame itself, for a protocol whose frames are raw audio). */
  append(frame: Buffer, bytes = frame.length): void {
    this.frames.push({ offset: this.received, frame, bytes });
    this.received += bytes;
    this.held += bytes;
    this.trim();
  }

  /** A vendor finalized the stream's audio up to `offset` bytes (its last final's end). */
  finalizedUpTo(offset: number): void {
    if (offset > this.finalized) this.finalized = Math.min(offset, this.received);
    this.trim();
  }

  get receivedBytes(): number {
    return this.received;
  }

  get finalizedBytes(): number {
    return this.finalized;
  }

  /**
   * The frames to replay to a new leg: those holding audio after the last final (whole frames, so the
   * first may begin a little before it), and the stream offset where the first begins.
   */
  pending(): { startOffset: number; frames: Buffer[] } {
    const frames = this.frames.map((f) => f.frame);
    return { startOffset: this.frames[0]?.offset ?? this.received, frames };
  }

  private trim(): void {
    // Drop frames wholly finalized, then the oldest while over capacity (older audio is lost to replay).
    while (this.frames.length > 0) {
      const head = this.frames[0] as { offset: number; bytes: number };
      const finalizedWhole = head.offset + head.bytes <= this.finalized;
      if (!finalizedWhole && this.held <= this.capacityBytes) break;
      this.frames.shift();
      this.held -= head.bytes;
    }
  }
}
