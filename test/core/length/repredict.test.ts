import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { doubled, midpoint, nextBucket } from '../../../src/core/length/repredict.ts';
import { isOutrun } from '../../../src/core/length/types.ts';

describe('re-prediction rules', () => {
  it('a point prediction is outrun at its value, a bucket at its top', () => {
    assert.equal(isOutrun({ tokens: 10 }, 9), false);
    assert.equal(isOutrun({ tokens: 10 }, 10), true);
    assert.equal(isOutrun({ tokens: 150, bucket: { low: 100, high: 200 } }, 150), false);
    assert.equal(isOutrun({ tokens: 150, bucket: { low: 100, high: 200 } }, 200), true);
  });

  it('doubling: twice the prediction, and always beyond what was generated', () => {
    assert.deepEqual(doubled({ tokens: 10 }, 10), { tokens: 20 });
    assert.deepEqual(doubled({ tokens: 10 }, 35), { tokens: 36 });
  });

  it('next bucket: the same width one up, skipping buckets already passed', () => {
    const previous = { tokens: 150, bucket: { low: 100, high: 200 } };
    assert.deepEqual(nextBucket(previous, 200), { tokens: 250, bucket: { low: 200, high: 300 } });
    assert.deepEqual(nextBucket(previous, 420), { tokens: 450, bucket: { low: 400, high: 500 } });
    assert.deepEqual(nextBucket({ tokens: 8 }, 8), { tokens: 16 });
  });

  it('a bucket middle is at least 1', () => {
    assert.equal(midpoint(0, 1), 1);
    assert.equal(midpoint(0, 200), 100);
  });
});
