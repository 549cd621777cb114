import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createHistoryPredictor } from '../../../src/core/length/history.ts';

const q = (id: string, promptTokens: number, key?: string) => ({
  id,
  promptTokens,
  ...(key === undefined ? {} : { key }),
});

describe('history', () => {
  it('predicts the prior before any request finished', () => {
    const history = createHistoryPredictor({ inputBucket: 100, prior: 42 });
    assert.deepEqual(history.predict(q('a', 10), 0), { tokens: 42 });
  });

  it('predicts the exact mean of its input-length bucket, apart from other buckets', () => {
    const history = createHistoryPredictor({ inputBucket: 100, prior: 42 });
    history.observe?.(q('a', 10), 100, 0);
    history.observe?.(q('b', 99), 300, 0);
    history.observe?.(q('c', 150), 1000, 0);
    assert.equal(history.predict(q('d', 50), 1).tokens, 200);
    assert.equal(history.predict(q('e', 199), 1).tokens, 1000);
    assert.equal(history.predict(q('f', 250), 1).tokens, 42);
  });

  it("prefers its key's mean to its bucket's once that key has finished", () => {
    const history = createHistoryPredictor({ inputBucket: 100, prior: 42 });
    history.observe?.(q('a', 10, 'p1'), 10, 0);
    history.observe?.(q('b', 10, 'p1'), 20, 0);
    history.observe?.(q('c', 10, 'p2'), 900, 0);
    assert.equal(history.predict(q('d', 10, 'p1'), 1).tokens, 15);
    assert.equal(history.predict(q('e', 10, 'p3'), 1).tokens, Math.round(930 / 3));
  });

  it('doubles when outrun', () => {
    const history = createHistoryPredictor({ inputBucket: 100, prior: 42 });
    assert.deepEqual(history.repredict(q('a', 10), 42, { tokens: 42 }), { tokens: 84 });
  });
});
