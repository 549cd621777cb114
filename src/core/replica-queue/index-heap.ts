/**
 * A max-heap of queue positions keyed by a number, popped lazily: building it is O(n) and each
 * pop O(log n), so a policy that admits k of n requests pays O(n + k log n) rather than a full sort.
 * Equal keys pop in increasing position (earlier in the queue first), which keeps orders deterministic.
 * The buffers are reused across `reset` calls, so one heap per policy avoids per-iteration allocation.
 */
export class IndexMaxHeap {
  private heap = new Uint32Array(0);
  private keyOf = new Float64Array(0);
  private size = 0;

  /** Prepares for `count` positions 0..count-1; set every key with `setKey`, then call `build`. */
  reset(count: number): void {
    if (this.heap.length < count) {
      const capacity = Math.max(count, this.heap.length * 2);
      this.heap = new Uint32Array(capacity);
      this.keyOf = new Float64Array(capacity);
    }
    this.size = count;
  }

  setKey(position: number, key: number): void {
    this.keyOf[position] = key;
  }

  build(): void {
    for (let i = 0; i < this.size; i++) this.heap[i] = i;
    for (let i = (this.size >> 1) - 1; i >= 0; i--) this.siftDown(i);
  }

  /** The position with the largest key, or -1 when empty. */
  pop(): number {
    if (this.size === 0) return -1;
    const top = this.heap[0]!;
    this.size--;
    if (this.size > 0) {
      this.heap[0] = this.heap[this.size]!;
      this.siftDown(0);
    }
    return top;
  }

  /** Whether position `a` must pop before position `b`. */
  private before(a: number, b: number): boolean {
    const ka = this.keyOf[a]!;
    const kb = this.keyOf[b]!;
    return ka > kb || (ka === kb && a < b);
  }

  private siftDown(start: number): void {
    const heap = this.heap;
    let i = start;
    for (;;) {
      const left = 2 * i + 1;
      if (left >= this.size) return;
      const right = left + 1;
      const child = right < this.size && this.before(heap[right]!, heap[left]!) ? right : left;
      if (!this.before(heap[child]!, heap[i]!)) return;
      const swap = heap[i]!;
      heap[i] = heap[child]!;
      heap[child] = swap;
      i = child;
    }
  }
}
