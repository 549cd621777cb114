/**
 * The history window H: entries in time order, dropped once older than `horizon` seconds.
 * A growable ring buffer gives amortized O(1) push and expiry (no Array.shift, which is O(n)).
 */
export class SlidingWindow<E extends { readonly time: number }> {
  private buffer: (E | undefined)[];
  private head = 0;
  private count = 0;

  constructor(
    readonly horizon: number,
    initialCapacity = 1024,
  ) {
    if (!(horizon > 0)) throw new Error(`window horizon must be positive, got ${horizon}`);
    this.buffer = new Array(nextPowerOfTwo(initialCapacity));
  }

  get size(): number {
    return this.count;
  }

  /** Append an entry; times must not decrease. */
  push(entry: E): void {
    if (this.count === this.buffer.length) this.grow();
    const last = this.peekNewest();
    if (last !== undefined && entry.time < last.time) {
      throw new Error(`window entries must arrive in time order (${entry.time} < ${last.time})`);
    }
    this.buffer[(this.head + this.count) & (this.buffer.length - 1)] = entry;
    this.count++;
  }

  /** Drop entries with time <= now - horizon, oldest first, handing each to `onExpire`. */
  expire(now: number, onExpire: (entry: E) => void): void {
    const cutoff = now - this.horizon;
    const mask = this.buffer.length - 1;
    while (this.count > 0) {
      const e = this.buffer[this.head]!;
      if (e.time > cutoff) break;
      this.buffer[this.head] = undefined;
      this.head = (this.head + 1) & mask;
      this.count--;
      onExpire(e);
    }
  }

  /**
   * `now`, or the newest entry's time if that is later: the time at which an entry stamped `now` can
   * join without breaking time order (a caller's clock that steps back, a report stamped late).
   */
  timeFrom(now: number): number {
    const newest = this.peekNewest();
    return newest !== undefined && newest.time > now ? newest.time : now;
  }

  peekOldest(): E | undefined {
    return this.count === 0 ? undefined : this.buffer[this.head];
  }

  peekNewest(): E | undefined {
    return this.count === 0
      ? undefined
      : this.buffer[(this.head + this.count - 1) & (this.buffer.length - 1)];
  }

  /** Entries oldest first (background work and tests; not for per-decision paths). */
  *entries(): Generator<E> {
    const mask = this.buffer.length - 1;
    for (let i = 0; i < this.count; i++) yield this.buffer[(this.head + i) & mask]!;
  }

  private grow(): void {
    const old = this.buffer;
    const mask = old.length - 1;
    const next: (E | undefined)[] = new Array(old.length * 2);
    for (let i = 0; i < this.count; i++) next[i] = old[(this.head + i) & mask];
    this.buffer = next;
    this.head = 0;
  }
}

function nextPowerOfTwo(n: number): number {
  let p = 16;
  while (p < n) p *= 2;
  return p;
}
