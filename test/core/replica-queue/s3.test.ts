import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createS3Policy } from '../../../src/core/replica-queue/s3.ts';
import { ctx, ids, req } from './helpers.ts';
import { predicted } from './predicted-helpers.ts';

describe('s3', () => {
  const s3 = createS3Policy();

  it('reserves the predicted remaining output less the prefill token, nothing without a prediction', () => {
    assert.equal(s3.reserveTokens(predicted('a', 10, 100)), 99);
    assert.equal(s3.reserveTokens(predicted('b', 10, 100, 0, 40)), 59);
    assert.equal(s3.reserveTokens(predicted('c', 10, 100, 0, 150)), 0);
    assert.equal(s3.reserveTokens(req('d', 10)), 0);
    assert.equal(s3.requeueOnOutrun, true);
  });

  it('admits in queue order while prompt plus reserve fits, stopping at the first that does not', () => {
    const queue = [predicted('a', 100, 101), predicted('b', 100, 301), predicted('c', 10, 2)];
    assert.deepEqual(ids(s3.select(queue, ctx({ freeKvTokens: 300 }))), ['a']);
    assert.deepEqual(ids(s3.select(queue, ctx({ freeKvTokens: 611 }))), ['a', 'b', 'c']);
  });
});
