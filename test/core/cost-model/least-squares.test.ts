import assert from 'node:assert/strict';
import { test } from 'node:test';
import { leastSquares, nonNegativeLeastSquares } from '../../../src/core/cost-model/least-squares.ts';

const close = (actual: number, expected: number, tolerance: number) =>
  assert.ok(Math.abs(actual - expected) <= tolerance, `${actual} vs ${expected}`);

// Columns of very different scales, as a cost model's: 1, tokens, context, pairs.
const rows: number[][] = [];
const ys: number[] = [];
for (let i = 0; i < 30; i++) {
  const n = 10 + 100 * i;
  const seq = n + 700 * (i % 5);
  rows.push([1, n, seq, n * seq, 1 + (i % 3)]);
  ys.push(2e-3 + 5e-4 * n + 1e-6 * seq + 2e-7 * n * seq + 1e-3 * (1 + (i % 3)));
}
const truth = [2e-3, 5e-4, 1e-6, 2e-7, 1e-3];

test('least squares recovers exact coefficients across ten orders of magnitude', () => {
  for (const solve of [leastSquares, nonNegativeLeastSquares]) {
    solve(rows, ys).forEach((x, i) => {
      close(x, truth[i]!, 1e-9 * truth[i]!);
    });
  }
});

test('non-negative least squares clamps a negative coefficient and refits the rest', () => {
  // Unconstrained: x = (-1, 2); with x >= 0 the best is x1 = 0, x2 = mean(2, 1).
  assert.deepEqual(
    leastSquares(
      [
        [1, 0],
        [0, 1],
        [1, 1],
      ],
      [-1, 2, 1],
    ).map((x) => Math.round(x * 1e9) / 1e9),
    [-1, 2],
  );
  const [x1, x2] = nonNegativeLeastSquares(
    [
      [1, 0],
      [0, 1],
      [1, 1],
    ],
    [-1, 2, 1],
  );
  assert.equal(x1, 0);
  close(x2!, 1.5, 1e-12);
});

test('least squares rejects dependent columns and ragged input', () => {
  assert.throws(
    () =>
      leastSquares(
        [
          [1, 2],
          [2, 4],
        ],
        [1, 2],
      ),
    /dependent/,
  );
  assert.throws(() => leastSquares([[1, 2], [1]], [1, 2]), /length/);
  // NNLS leaves a dependent column out instead of failing.
  const x = nonNegativeLeastSquares(
    [
      [1, 2],
      [2, 4],
    ],
    [1, 2],
  );
  close(x[0]! + 2 * x[1]!, 1, 1e-9);
});
