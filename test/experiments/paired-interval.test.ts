import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { pairedRatioInterval } from '../../src/experiments/paired-interval.ts';

test('a paired interval of two runs that differ by a constant factor is that factor, for the mean and a quantile', () => {
  const b = Float64Array.from({ length: 300 }, (_, i) => 1 + ((i * 37) % 101) / 10);
  const a = b.map((x) => 2 * x);
  for (const stat of ['mean', 0.99] as const) {
    const { lo, hi } = pairedRatioInterval(a, b, stat, { resamples: 200 });
    assert.ok(Math.abs(lo - 2) < 1e-12 && Math.abs(hi - 2) < 1e-12, `${stat}: ${lo}-${hi}`);
  }
  assert.deepEqual(pairedRatioInterval(b, b, 0.99, { resamples: 50 }), { lo: 1, hi: 1 });
});

test('a p99 resting on a handful of requests gets an interval that reaches even; a shift of every request does not', () => {
  // 400 requests, the same under both runs but for the two slowest, which run 20% longer under `a`.
  const b = Float64Array.from({ length: 400 }, (_, i) => 1 + i / 100);
  const tail = b.map((x, i) => (i >= 398 ? 1.2 * x : x));
  const tailOnly = pairedRatioInterval(tail, b, 0.99);
  assert.ok(tailOnly.lo <= 1 && tailOnly.hi > 1.02, `${tailOnly.lo}-${tailOnly.hi}`);
  const everyone = pairedRatioInterval(
    b.map((x) => 1.1 * x),
    b,
    0.99,
  );
  assert.ok(everyone.lo > 1.02, `${everyone.lo}`);
});

test('paired intervals are seeded (the same seed, the same interval) and refuse unpaired samples', () => {
  const a = Float64Array.from({ length: 100 }, (_, i) => (i * 7919) % 113);
  const b = Float64Array.from({ length: 100 }, (_, i) => 1 + ((i * 104729) % 97));
  assert.deepEqual(
    pairedRatioInterval(a, b, 0.99, { seed: 3 }),
    pairedRatioInterval(a, b, 0.99, { seed: 3 }),
  );
  assert.throws(() => pairedRatioInterval(a, b.subarray(1), 'mean'), /differ in length: 100 and 99/);
  assert.throws(() => pairedRatioInterval([], [], 'mean'), /empty/);
});

test('property: when every request is at least as fast under a, the interval of stat(a) / stat(b) stays at or below 1', () => {
  fc.assert(
    fc.property(
      fc.array(
        fc.tuple(fc.double({ min: 0.01, max: 100, noNaN: true }), fc.double({ min: 0, max: 1, noNaN: true })),
        {
          minLength: 1,
          maxLength: 60,
        },
      ),
      fc.constantFrom<'mean' | number>('mean', 0.5, 0.99),
      fc.integer({ min: 0, max: 1000 }),
      (pairs, stat, seed) => {
        const b = Float64Array.from(pairs, ([x]) => x);
        const a = Float64Array.from(pairs, ([x, f]) => x * f);
        const { lo, hi } = pairedRatioInterval(a, b, stat, { resamples: 30, seed });
        assert.ok(lo <= hi && hi <= 1 + 1e-12, `${lo}-${hi}`);
      },
    ),
    { seed: 11, numRuns: 200 },
  );
});
