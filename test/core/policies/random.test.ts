import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { RandomPolicy } from '../../../src/core/policies/random.ts';
import { addInstances, req, run } from './helpers.ts';

const picks = (p: RandomPolicy, n: number) =>
  Array.from({ length: n }, () => p.route(req(run(0, 4)), 0).instance);

describe('random', () => {
  it('is deterministic for a seed and differs across seeds', () => {
    const a = picks(addInstances(new RandomPolicy({ seed: 7 }), 8), 200);
    const b = picks(addInstances(new RandomPolicy({ seed: 7 }), 8), 200);
    const c = picks(addInstances(new RandomPolicy({ seed: 8 }), 8), 200);
    assert.deepEqual(a, b);
    assert.notDeepEqual(a, c);
  });

  it('spreads requests roughly uniformly', () => {
    const n = 8;
    const draws = 16_000;
    const counts = new Array<number>(n).fill(0);
    for (const id of picks(addInstances(new RandomPolicy(), n), draws)) counts[id]!++;
    const expected = draws / n;
    const chi2 = counts.reduce((s, c) => s + (c - expected) ** 2 / expected, 0);
    // 7 degrees of freedom: P(chi2 > 24.3) = 0.001.
    assert.ok(chi2 < 24.3, `chi-square ${chi2} for counts ${counts}`);
  });

  it('only picks active instances', () => {
    const p = addInstances(new RandomPolicy({ seed: 3 }), 4);
    p.instanceDrained(1, 0);
    p.instanceRemoved(2, 0);
    const seen = new Set(picks(p, 400));
    assert.deepEqual([...seen].sort(), [0, 3]);
    const d = p.route(req(run(0, 4)), 0);
    assert.equal(d.branch, 'random');
    assert.equal(d.matchedTokens, 0);
  });
});
