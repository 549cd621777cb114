import assert from 'node:assert/strict';
import { test } from 'node:test';
import { fitLine } from '../../../src/core/cost-model/fit-line.ts';

test('fitLine recovers an exact line with R^2 = 1 and no error', () => {
  const xs = [1, 2, 4, 8, 16];
  const fit = fitLine(
    xs,
    xs.map((x) => 3 + 0.5 * x),
  );
  assert.ok(Math.abs(fit.intercept - 3) < 1e-12);
  assert.ok(Math.abs(fit.slope - 0.5) < 1e-12);
  assert.ok(Math.abs(fit.rSquared - 1) < 1e-12);
  assert.ok(fit.maxAbsError < 1e-12);
  assert.equal(fit.points, 5);
});

test('fitLine: least squares through (0,0), (1,1), (2,1), hand-solved', () => {
  // Normal equations: slope = 0.5, intercept = 1/6; residuals -1/6, 1/3, -1/6.
  const fit = fitLine([0, 1, 2], [0, 1, 1]);
  assert.ok(Math.abs(fit.slope - 0.5) < 1e-12);
  assert.ok(Math.abs(fit.intercept - 1 / 6) < 1e-12);
  assert.ok(Math.abs(fit.maxAbsError - 1 / 3) < 1e-12);
  // SS_res = 1/36 + 1/9 + 1/36 = 1/6; SS_tot = 4/9 + 1/9 + 1/9 = 2/3.
  assert.ok(Math.abs(fit.rSquared - 0.75) < 1e-12);
  assert.ok(Math.abs(fit.maxRelError - 1 / 3) < 1e-12);
});

test('fitLine rejects too few or degenerate points', () => {
  assert.throws(() => fitLine([1], [1]));
  assert.throws(() => fitLine([1, 2], [1]));
  assert.throws(() => fitLine([2, 2], [1, 3]));
});
