import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createWorkload, workloadNames } from '../../src/workloads/registry.ts';
import { take } from './helpers.ts';

describe('workloads are lazy', () => {
  for (const name of workloadNames) {
    it(`${name}: the first 10 of a 10,000,000-request stream come without the rest`, () => {
      const first = take(createWorkload(name, { requests: 10_000_000, rps: 100, seed: 1 }), 10);
      assert.equal(first.length, 10);
      if (name !== 'mixed')
        assert.deepEqual(
          first.map((r) => r.id),
          Array.from({ length: 10 }, (_, n) => `${name}-${n}`),
        );
    });
  }

  it('an endless stream (requests: Infinity) works the same way', () => {
    assert.equal(
      take(createWorkload('toolbench', { requests: Number.POSITIVE_INFINITY, rps: 1, seed: 1 }), 5).length,
      5,
    );
  });
});
