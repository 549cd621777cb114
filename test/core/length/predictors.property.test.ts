import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { createHistoryPredictor } from '../../../src/core/length/history.ts';
import { createOracleBucketPredictor } from '../../../src/core/length/oracle-bucket.ts';
import { createRankOraclePredictor } from '../../../src/core/length/rank-oracle.ts';
import { createLengthPredictor, lengthPredictorNames } from '../../../src/core/length/registry.ts';
import { isOutrun } from '../../../src/core/length/types.ts';
import { kendallTau, lognormalQueries } from './helpers.ts';

describe('length predictors (properties)', () => {
  it("rank-oracle's Kendall tau is the configured one within sampling tolerance", () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 1000 }), fc.constantFrom(0, 0.3, 0.6, 0.9), (seed, tau) => {
        const queries = lognormalQueries(300, seed);
        const ranker = createRankOraclePredictor({ tau, seed });
        const scores = queries.map((q) => ranker.predict(q, 0).tokens);
        const measured = kendallTau(
          scores,
          queries.map((q) => q.trueOutputTokens ?? 0),
        );
        // Sampling sd of tau over 300 pairs is below 0.04; rounding scores to tokens adds ties.
        assert.ok(Math.abs(measured - tau) < 0.15, `tau ${tau}: measured ${measured}`);
      }),
      { numRuns: 12 },
    );
  });

  it("oracle-bucket's accuracy is the configured one within 4 standard errors", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 1000 }),
        fc.constantFrom(0.589, 0.749, 0.85),
        fc.constantFrom(100, 200, 400),
        (seed, accuracy, granularity) => {
          const n = 1000;
          const queries = lognormalQueries(n, seed);
          const predictor = createOracleBucketPredictor({ granularity, accuracy, seed });
          let hits = 0;
          for (const q of queries) {
            const p = predictor.predict(q, 0);
            const truth = q.trueOutputTokens ?? 0;
            const bucket = p.bucket ?? { low: 0, high: 0 };
            if (bucket.low <= truth && truth < bucket.high) hits++;
            else
              assert.equal(Math.abs(bucket.low - Math.floor(truth / granularity) * granularity), granularity);
          }
          const se = Math.sqrt((accuracy * (1 - accuracy)) / n);
          assert.ok(Math.abs(hits / n - accuracy) < 4 * se, `${hits} of ${n} at ${accuracy}`);
        },
      ),
      { numRuns: 12 },
    );
  });

  it('history predicts the exact mean of what it observed in a bucket', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 1, max: 5000 }), { minLength: 1, maxLength: 50 }), (outputs) => {
        const history = createHistoryPredictor({ inputBucket: 64, prior: 1 });
        for (const [i, out] of outputs.entries())
          history.observe?.({ id: `r${i}`, promptTokens: 10 }, out, 0);
        const mean = outputs.reduce((a, b) => a + b, 0) / outputs.length;
        assert.equal(history.predict({ id: 'x', promptTokens: 63 }, 1).tokens, Math.max(1, Math.round(mean)));
      }),
    );
  });

  it('every predictor re-predicts beyond what was generated, and is deterministic per seed', () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...lengthPredictorNames),
        fc.integer({ min: 1, max: 4000 }),
        fc.integer({ min: 0, max: 20 }),
        (name, truth, seed) => {
          const q = { id: 'q', promptTokens: 300, trueOutputTokens: truth };
          const a = createLengthPredictor(name, { seed });
          const b = createLengthPredictor(name, { seed });
          let prediction = a.predict(q, 0);
          assert.deepEqual(b.predict(q, 0), prediction);
          assert.ok(prediction.tokens >= 1);
          let generated = 0;
          for (let step = 0; step < 40 && generated < truth; step++) {
            generated = Math.min(truth, generated + 97);
            if (generated < truth && isOutrun(prediction, generated)) {
              prediction = a.repredict(q, generated, prediction);
              assert.ok(
                !isOutrun(prediction, generated),
                `${name} re-predicted ${prediction.tokens} at ${generated}`,
              );
            }
          }
        },
      ),
    );
  });
});
