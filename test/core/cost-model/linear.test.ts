import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { linearCostModel } from '../../../src/core/cost-model/linear.ts';

const coefficients = { a: 0.01, b: 2e-4, c: 3e-6, d: 5e-9 };
const model = linearCostModel('toy', coefficients, { kvBytesPerToken: 1000, kvCapacityTokens: 5000 });

test('iterationTime is a + b*new + c*seq + d*new*seq over the batch sums', () => {
  const batch = { requests: 3, newTokens: 514, seqTokens: 9000, newTimesSeq: 2_500_000 };
  const expected = 0.01 + 2e-4 * 514 + 3e-6 * 9000 + 5e-9 * 2_500_000;
  assert.ok(Math.abs(model.iterationTime(batch) - expected) < 1e-15);
  assert.equal(model.iterationTime({ requests: 0, newTokens: 0, seqTokens: 0, newTimesSeq: 0 }), 0);
});

test('prefillTime is one iteration of the request alone, and 0 for nothing to prefill', () => {
  // 100 new on 400 cached: seq = 500, new x seq = 50,000.
  const expected = 0.01 + 2e-4 * 100 + 3e-6 * 500 + 5e-9 * 50_000;
  assert.ok(Math.abs(model.prefillTime(100, 400) - expected) < 1e-15);
  assert.equal(model.prefillTime(0, 400), 0);
  assert.equal(model.prefillTime(-3, 400), 0);
});

test('decodeTime: hand-computed two steps, and 0 for no output', () => {
  // Steps at seq 11 and 12: 2(a + b) + (c + d)(11 + 12).
  const expected = 2 * (0.01 + 2e-4) + (3e-6 + 5e-9) * 23;
  assert.ok(Math.abs(model.decodeTime(2, 10) - expected) < 1e-15);
  assert.equal(model.decodeTime(0, 10), 0);
});

test('decodeTime closed form equals the sum of one-token iterations', () => {
  fc.assert(
    fc.property(fc.integer({ min: 1, max: 3000 }), fc.integer({ min: 0, max: 100_000 }), (k, context) => {
      let loop = 0;
      for (let j = 1; j <= k; j++) {
        const seq = context + j;
        loop += model.iterationTime({ requests: 1, newTokens: 1, seqTokens: seq, newTimesSeq: seq });
      }
      assert.ok(Math.abs(model.decodeTime(k, context) - loop) <= 1e-9 * loop);
    }),
  );
});

test('memory fields pass through', () => {
  assert.equal(model.kvBytesPerToken, 1000);
  assert.equal(model.kvCapacityTokens, 5000);
  assert.equal(model.name, 'toy');
});
