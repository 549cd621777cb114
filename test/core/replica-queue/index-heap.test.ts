import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { IndexMaxHeap } from '../../../src/core/replica-queue/index-heap.ts';

function drain(heap: IndexMaxHeap, keys: readonly number[]): number[] {
  heap.reset(keys.length);
  keys.forEach((key, i) => {
    heap.setKey(i, key);
  });
  heap.build();
  const order: number[] = [];
  for (let i = heap.pop(); i >= 0; i = heap.pop()) order.push(i);
  return order;
}

describe('IndexMaxHeap', () => {
  it('pops largest key first, equal keys in position order', () => {
    assert.deepEqual(drain(new IndexMaxHeap(), [1, 3, 3, 2, 3]), [1, 2, 4, 3, 0]);
    assert.deepEqual(drain(new IndexMaxHeap(), []), []);
  });

  it('matches a stable descending sort, also when reused across sizes', () => {
    const heap = new IndexMaxHeap();
    fc.assert(
      fc.property(fc.array(fc.integer({ min: -5, max: 5 }), { maxLength: 200 }), (keys) => {
        const expected = keys.map((_, i) => i).sort((a, b) => keys[b]! - keys[a]! || a - b);
        assert.deepEqual(drain(heap, keys), expected);
      }),
    );
  });
});
