import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createLtrPolicy } from '../../../src/core/replica-queue/ltr.ts';
import { ctx, ids, req } from './helpers.ts';
import { predicted } from './predicted-helpers.ts';

describe('ltr', () => {
  it('admits in increasing predicted length (the rank), unpredicted last', () => {
    const ltr = createLtrPolicy({ starvationSeconds: 1000 });
    const queue = [req('none', 10, 0, 0), predicted('b', 10, 300, 1), predicted('a', 10, 30, 2)];
    assert.deepEqual(ids(ltr.select(queue, ctx({ now: 10 }))), ['a', 'b', 'none']);
  });

  it('ranks by the total prediction, not the remainder', () => {
    const ltr = createLtrPolicy({ starvationSeconds: 1000 });
    const queue = [predicted('long-half-done', 10, 300, 0, 290), predicted('short', 10, 30, 1)];
    assert.deepEqual(ids(ltr.select(queue, ctx({ now: 10 }))), ['short', 'long-half-done']);
  });

  it('puts starved requests first, the longest-waiting first, counting from a preemption', () => {
    const ltr = createLtrPolicy({ starvationSeconds: 5 });
    const queue = [
      predicted('old-long', 10, 900, 0),
      predicted('older-long', 10, 800, -2),
      { ...predicted('preempted', 10, 1000, -50), preemptedAt: 8 },
      predicted('fresh-short', 10, 10, 9),
    ];
    assert.deepEqual(ids(ltr.select(queue, ctx({ now: 10 }))), [
      'older-long',
      'old-long',
      'fresh-short',
      'preempted',
    ]);
  });

  it('rejects a non-positive guard', () => {
    assert.throws(() => createLtrPolicy({ starvationSeconds: 0 }), /starvationSeconds/);
  });
});
