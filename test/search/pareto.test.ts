import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { dominates, paretoFront } from '../../src/search/pareto.ts';

const vectors = fc.array(fc.array(fc.integer({ min: 0, max: 5 }), { minLength: 2, maxLength: 2 }), {
  maxLength: 30,
});

describe('paretoFront', () => {
  test('no member is dominated, and every non-member is dominated by a member', () => {
    fc.assert(
      fc.property(vectors, (points) => {
        const front = paretoFront(points, (p) => p);
        for (const member of front) assert.ok(!points.some((p) => dominates(p, member)));
        for (const p of points)
          if (!front.includes(p)) assert.ok(front.some((member) => dominates(member, p)));
      }),
    );
  });

  test('the front of the front is itself, and the input order does not change its set', () => {
    fc.assert(
      fc.property(vectors, (points) => {
        const front = paretoFront(points, (p) => p);
        assert.deepEqual(
          paretoFront(front, (p) => p),
          front,
        );
        const reversed = paretoFront([...points].reverse(), (p) => p);
        assert.deepEqual(new Set(reversed), new Set(front));
      }),
    );
  });

  test('keeps equal points, drops dominated ones', () => {
    const front = paretoFront(
      [
        [1, 1],
        [2, 0],
        [1, 1],
        [0, 0],
      ],
      (p) => p,
    );
    assert.deepEqual(front, [
      [1, 1],
      [2, 0],
      [1, 1],
    ]);
  });
});
