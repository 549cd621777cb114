import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import {
  distance,
  errorLine,
  type Movable,
  rebalance,
  type WorkerError,
} from '../../../../src/core/policies/aladdin/rebalance.ts';

// k2 = 1e-6 s per token of context, c2 = 1e-3 s per request, θ = 1: α = 1e-6, β = 1e-3.
const line = errorLine(1e-6, 1e-3, 1);
const always = () => true;

test('the error line comes from Eq. 4: α = k2/θ, β = c2', () => {
  assert.deepEqual(errorLine(2e-6, 5e-4, 0.5), { alpha: 4e-6, beta: 5e-4 });
  // 1,000 tokens and one request beyond plan: 1e-3 + 1e-3 = 2e-3 s of step, over √(α² + β²).
  assert.ok(Math.abs(distance(line, 1000, 1) - 2e-3 / Math.hypot(1e-6, 1e-3)) < 1e-9);
});

test('a request not started moves from the over-utilized worker to the under-utilized one', () => {
  // Worker 0: a request outran its prediction (+2,000 tokens, +1); worker 1: one finished 2,000 early.
  const errors: WorkerError[] = [
    { instance: 0, le: 2000, be: 1 },
    { instance: 1, le: -2000, be: -1 },
    { instance: 2, le: 0, be: 0 },
  ];
  const movable: Movable[] = [
    { id: 'small', instance: 0, tokens: 300 },
    { id: 'fits-error', instance: 0, tokens: 1900 },
    { id: 'on-2', instance: 2, tokens: 500 },
  ];
  const moves = rebalance(line, errors, movable, always);
  // The one closest to the error goes; the small one after it would overshoot (worse), and the request
  // on the balanced worker stays.
  assert.deepEqual(moves, [{ id: 'fits-error', from: 0, to: 1 }]);
  assert.deepEqual(
    errors.map((e) => [e.le, e.be]),
    [
      [100, 0],
      [-100, 0],
      [0, 0],
    ],
  );
});

test('nothing moves when every worker is as planned, or where the destination does not fit it', () => {
  const balanced: WorkerError[] = [
    { instance: 0, le: 0, be: 0 },
    { instance: 1, le: 0, be: 0 },
  ];
  assert.deepEqual(rebalance(line, balanced, [{ id: 'a', instance: 0, tokens: 100 }], always), []);
  const skewed: WorkerError[] = [
    { instance: 0, le: 2000, be: 1 },
    { instance: 1, le: -2000, be: -1 },
  ];
  assert.deepEqual(
    rebalance(line, skewed, [{ id: 'a', instance: 0, tokens: 1000 }], () => false),
    [],
  );
});

test('moves only lower the summed distance, each request at most once', () => {
  const worker = fc.record({
    le: fc.integer({ min: -5000, max: 5000 }),
    be: fc.integer({ min: -3, max: 3 }),
  });
  fc.assert(
    fc.property(
      fc.array(worker, { minLength: 2, maxLength: 5 }),
      fc.array(fc.record({ at: fc.nat(), tokens: fc.integer({ min: 1, max: 3000 }) }), { maxLength: 12 }),
      (ws, rs) => {
        const errors = ws.map((w, instance) => ({ instance, ...w }));
        const movable = rs.map((r, i) => ({ id: `r${i}`, instance: r.at % ws.length, tokens: r.tokens }));
        const sum = () => errors.reduce((s, e) => s + distance(line, e.le, e.be), 0);
        const before = sum();
        const moves = rebalance(line, errors, movable, always);
        assert.equal(new Set(moves.map((m) => m.id)).size, moves.length);
        assert.ok(moves.every((m) => m.from !== m.to));
        if (moves.length > 0) assert.ok(sum() < before);
        else assert.equal(sum(), before);
      },
    ),
    { numRuns: 200, seed: 14 },
  );
});
