import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { type Line, sumLine, sumMaxOfLines } from '../../../src/core/cost-model/series.ts';

const line = fc.record({
  intercept: fc.double({ min: -100, max: 100, noNaN: true }),
  slope: fc.double({ min: -1, max: 1, noNaN: true }),
});
const at = (l: Line, s: number) => l.intercept + l.slope * s;

function closeTo(actual: number, expected: number, scale: number): void {
  assert.ok(Math.abs(actual - expected) <= 1e-9 * Math.max(1, scale), `${actual} vs ${expected}`);
}

test('sumLine equals the loop, and is 0 on an empty range', () => {
  fc.assert(
    fc.property(
      line,
      fc.integer({ min: -500, max: 500 }),
      fc.integer({ min: -1, max: 500 }),
      (l, lo, length) => {
        let loop = 0;
        let scale = 0;
        for (let s = lo; s < lo + length; s++) {
          loop += at(l, s);
          scale += Math.abs(at(l, s));
        }
        closeTo(sumLine(l, lo, lo + length - 1), loop, scale);
      },
    ),
  );
  assert.equal(sumLine({ intercept: 5, slope: 1 }, 3, 2), 0);
});

test('sumMaxOfLines equals the loop of maxima, whichever way the lines cross', () => {
  fc.assert(
    fc.property(
      line,
      line,
      fc.integer({ min: -500, max: 500 }),
      fc.integer({ min: 0, max: 500 }),
      (f, g, lo, length) => {
        let loop = 0;
        let scale = 0;
        for (let s = lo; s < lo + length; s++) {
          loop += Math.max(at(f, s), at(g, s));
          scale += Math.abs(Math.max(at(f, s), at(g, s)));
        }
        closeTo(sumMaxOfLines(f, g, lo, lo + length - 1), loop, scale);
      },
    ),
  );
});

test('sumMaxOfLines switches lines at the crossing', () => {
  // f = s, g = 10 - s cross at 5: max over 0..10 is 10,9,8,7,6,5,6,7,8,9,10.
  const f = { intercept: 0, slope: 1 };
  const g = { intercept: 10, slope: -1 };
  assert.equal(sumMaxOfLines(f, g, 0, 10), 85);
  assert.equal(sumMaxOfLines(g, f, 0, 10), 85);
});
