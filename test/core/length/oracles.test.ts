import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createOraclePredictor } from '../../../src/core/length/oracle.ts';
import { createOracleBucketPredictor } from '../../../src/core/length/oracle-bucket.ts';
import { createOracleNoisePredictor } from '../../../src/core/length/oracle-noise.ts';
import { query } from './helpers.ts';

describe('oracle', () => {
  it('predicts the truth, and refuses a query without one', () => {
    const oracle = createOraclePredictor();
    assert.deepEqual(oracle.predict(query('a', 321), 0), { tokens: 321 });
    assert.throws(() => oracle.predict({ id: 'b', promptTokens: 5 }, 0), /needs the true output length/);
  });
});

describe('oracle-noise', () => {
  it('is exact at sigma 0 and the same for one request however often asked', () => {
    assert.equal(createOracleNoisePredictor({ sigma: 0, seed: 1 }).predict(query('a', 77), 0).tokens, 77);
    const noisy = createOracleNoisePredictor({ sigma: 1, seed: 1 });
    const first = noisy.predict(query('a', 500), 0);
    noisy.predict(query('b', 500), 0);
    assert.deepEqual(noisy.predict(query('a', 500), 1), first);
  });

  it('keeps the truth as its median in log space', () => {
    const noisy = createOracleNoisePredictor({ sigma: 0.5, seed: 3 });
    let above = 0;
    for (let i = 0; i < 1000; i++) if (noisy.predict(query(`r${i}`, 1000), 0).tokens > 1000) above++;
    assert.ok(above > 430 && above < 570, `${above} of 1000 above the truth`);
  });

  it('rejects a negative sigma', () => {
    assert.throws(() => createOracleNoisePredictor({ sigma: -1, seed: 0 }), /sigma/);
  });
});

describe('oracle-bucket', () => {
  it('at accuracy 1 predicts the true bucket with its middle as the point', () => {
    const exact = createOracleBucketPredictor({ granularity: 100, accuracy: 1, seed: 0 });
    assert.deepEqual(exact.predict(query('a', 250), 0), { tokens: 250, bucket: { low: 200, high: 300 } });
    assert.deepEqual(exact.predict(query('b', 99), 0), { tokens: 50, bucket: { low: 0, high: 100 } });
  });

  it('at accuracy 0 lands in a neighbouring bucket: above from bucket 0, else either side', () => {
    const wrong = createOracleBucketPredictor({ granularity: 100, accuracy: 0, seed: 0 });
    for (let i = 0; i < 50; i++) assert.equal(wrong.predict(query(`z${i}`, 40), 0).bucket?.low, 100);
    const sides = new Set<number>();
    for (let i = 0; i < 50; i++) sides.add(wrong.predict(query(`m${i}`, 550), 0).bucket?.low ?? -1);
    assert.deepEqual(
      [...sides].sort((a, b) => a - b),
      [400, 600],
    );
  });

  it('re-predicts the next bucket when outrun', () => {
    const exact = createOracleBucketPredictor({ granularity: 200, accuracy: 1, seed: 0 });
    const first = exact.predict(query('a', 50), 0);
    assert.deepEqual(exact.repredict(query('a', 50), 200, first), {
      tokens: 300,
      bucket: { low: 200, high: 400 },
    });
  });

  it('rejects a bad granularity or accuracy', () => {
    assert.throws(() => createOracleBucketPredictor({ granularity: 0, accuracy: 1, seed: 0 }), /granularity/);
    assert.throws(() => createOracleBucketPredictor({ granularity: 10, accuracy: 2, seed: 0 }), /accuracy/);
  });
});
