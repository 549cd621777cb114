import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { NoInstanceAvailableError } from '../../../src/core/cluster-view.ts';
import { RoundRobinPolicy } from '../../../src/core/policies/round-robin.ts';
import { addInstances, req, run } from './helpers.ts';

const pick = (p: RoundRobinPolicy) => p.route(req(run(0, 4)), 0).instance;

describe('round-robin', () => {
  it('cycles over the instances in id order', () => {
    const p = addInstances(new RoundRobinPolicy(), 3);
    assert.deepEqual(
      Array.from({ length: 7 }, () => pick(p)),
      [0, 1, 2, 0, 1, 2, 0],
    );
    const d = p.route(req(run(0, 4)), 0);
    assert.equal(d.branch, 'round-robin');
    assert.equal(d.matchedTokens, 0);
    assert.deepEqual(d.costs, []);
  });

  it('skips a drained instance and takes it back when it returns', () => {
    const p = addInstances(new RoundRobinPolicy(), 3);
    assert.equal(pick(p), 0);
    p.instanceDrained(1, 0);
    assert.deepEqual([pick(p), pick(p), pick(p)], [2, 0, 2]);
    p.instanceAdded(1, { kvCapacityTokens: 100 }, 0);
    assert.deepEqual([pick(p), pick(p), pick(p)], [0, 1, 2]);
  });

  it('keeps its place when instances are removed or join', () => {
    const p = addInstances(new RoundRobinPolicy(), [0, 1, 2, 3]);
    assert.deepEqual([pick(p), pick(p)], [0, 1]);
    p.instanceRemoved(1, 0);
    p.instanceRemoved(2, 0);
    assert.equal(pick(p), 3);
    p.instanceAdded(7, { kvCapacityTokens: 100 }, 0);
    assert.deepEqual([pick(p), pick(p), pick(p)], [7, 0, 3]);
  });

  it('throws when no instance takes requests', () => {
    const p = addInstances(new RoundRobinPolicy(), 1);
    p.instanceDrained(0, 0);
    assert.throws(() => pick(p), NoInstanceAvailableError);
  });

  it('gives every active instance the same share between membership changes', () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(fc.integer({ min: 0, max: 40 }), { minLength: 1, maxLength: 12 }),
        fc.integer({ min: 0, max: 40 }),
        fc.integer({ min: 1, max: 5 }),
        (ids, warmup, rounds) => {
          const p = addInstances(new RoundRobinPolicy(), ids);
          for (let i = 0; i < warmup; i++) pick(p);
          const counts = new Map<number, number>();
          for (let i = 0; i < rounds * ids.length; i++) {
            const id = pick(p);
            counts.set(id, (counts.get(id) ?? 0) + 1);
          }
          for (const id of ids) assert.equal(counts.get(id), rounds);
        },
      ),
    );
  });
});
