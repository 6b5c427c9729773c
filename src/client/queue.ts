/**
 * A bounded FIFO that never blocks and never grows past `capacity`: when full, the oldest item is
 * dropped and counted. push is O(1) amortized, so it is safe to call from a voice loop.
 */
export class DropOldestQueue<T> {
  private items: T[] = [];
  private head = 0;
  dropped = 0;

  constructor(readonly capacity: number) {
    if (!Number.isInteger(capacity) || capacity < 1) throw new RangeError("capacity must be a positive integer");
  }

  get length(): number {
    return this.items.length - this.head;
  }

  push(item: T): void {
    if (this.length >= this.capacity) {
      this.head++;
      this.dropped++;
    }
    this.items.push(item);
    this.compact();
  }

  /** Removes and returns up to n items from the front. */
  take(n: number): T[] {
    const out = this.items.slice(this.head, this.head + n);
    this.head += out.length;
    this.compact();
    return out;
  }

  /** Puts items back at the front (a batch that could not be sent), dropping the oldest past capacity. */
  unshift(batch: T[]): void {
    this.items = [...batch, ...this.items.slice(this.head)];
    this.head = 0;
    const excess = this.items.length - this.capacity;
    if (excess > 0) {
      this.items.splice(0, excess);
      this.dropped += excess;
    }
  }

  private compact(): void {
    if (this.head > 1024 && this.head * 2 > this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
  }
}
