import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { CacheAwarePolicy } from '../../../src/core/policies/cache-aware.ts';
import { addInstances, concat, req, routeIdle, run } from './helpers.ts';

const shared = run(1000, 64);

describe('cache-aware', () => {
  it('explores to the smallest tree when nothing matches well enough', () => {
    const p = addInstances(new CacheAwarePolicy(), 3);
    const first = p.route(req(run(0, 100)), 0);
    assert.equal(first.branch, 'explore');
    assert.equal(first.instance, 0); // all empty and idle: lowest id
    // Instance 0 now holds 100 tokens; 1 and 2 are empty, 1 is less loaded than 0.
    const second = p.route(req(run(5000, 40)), 0);
    assert.equal(second.instance, 1);
    assert.deepEqual(
      second.costs.map((c) => c.total),
      [100, 0, 0],
    );
    const third = p.route(req(run(9000, 10)), 0);
    assert.equal(third.instance, 2);
    // Smallest tree wins over load: instance 2 (10 tokens) beats 1 (40).
    assert.equal(p.route(req(run(20_000, 10)), 0).instance, 2);
  });

  it('follows the longest match when the match rate exceeds the threshold', () => {
    const p = addInstances(new CacheAwarePolicy(), 2);
    assert.equal(routeIdle(p, concat(shared, run(0, 16))), 0);
    assert.equal(routeIdle(p, run(7000, 8)), 1); // unrelated: smaller tree
    const d = p.route(req(concat(shared, run(100, 16))), 0);
    // 64 of 80 tokens cached on 0: 0.8 > 0.3.
    assert.equal(d.branch, 'cache-hit');
    assert.equal(d.instance, 0);
    assert.equal(d.matchedTokens, 64);
    assert.deepEqual(
      d.costs.map((c) => [c.instance, c.total, c.matchedTokens]),
      [
        [0, 16, 64],
        [1, 80, 0],
      ],
    );
    // 64 of 400 tokens = 0.16 <= 0.3: explore instead, to the smaller tree (instance 1).
    const low = p.route(req(concat(shared, run(200, 336))), 0);
    assert.equal(low.branch, 'explore');
    assert.equal(low.instance, 1);
    // With a lower threshold the same kind of request is a cache hit.
    const eager = addInstances(new CacheAwarePolicy({ cacheThreshold: 0.1 }), 2);
    routeIdle(eager, concat(shared, run(0, 16)));
    assert.equal(eager.route(req(concat(shared, run(200, 336))), 0).branch, 'cache-hit');
  });

  it('routes to the least loaded instance when load is imbalanced, and still inserts the prompt', () => {
    const p = addInstances(new CacheAwarePolicy({ balanceAbsThreshold: 2, balanceRelThreshold: 1.5 }), 2);
    let tail = 0;
    const prompt = () => concat(shared, run(50_000 + 8 * tail++, 8));
    const branches: string[] = [];
    const targets: number[] = [];
    for (let i = 0; i < 4; i++) {
      const d = p.route(req(prompt()), 0);
      branches.push(d.branch);
      targets.push(d.instance);
    }
    // Loads (0,0) explore to 0; then cache hits on 0 until 3 - 0 > 2 and 3 > 1.5 x 0.
    assert.deepEqual(branches, ['explore', 'cache-hit', 'cache-hit', 'load']);
    assert.deepEqual(targets, [0, 0, 0, 1]);
    // The imbalanced route inserted the prompt into instance 1's tree too.
    p.tree.match(concat(shared, run(1, 8)));
    assert.equal(p.tree.cachedOn(1), 64);
  });

  it('uses the default thresholds 64 and 1.5', () => {
    const p = addInstances(new CacheAwarePolicy(), 2);
    for (let i = 0; i < 64; i++) p.route(req(concat(shared, run(10_000 + i * 8, 8))), 0);
    assert.equal(p.inflight(0), 64);
    // 64 - 0 is not > 64: still a cache hit; the next one tips it.
    assert.equal(p.route(req(concat(shared, run(1, 8))), 0).branch, 'cache-hit');
    const d = p.route(req(concat(shared, run(2, 8))), 0);
    assert.equal(d.branch, 'load');
    assert.equal(d.instance, 1);
  });

  it('ignores drained instances and forgets removed ones', () => {
    const p = addInstances(new CacheAwarePolicy(), 2);
    routeIdle(p, concat(shared, run(0, 16)));
    p.instanceDrained(0, 0);
    const d = p.route(req(concat(shared, run(100, 16))), 0);
    assert.equal(d.instance, 1);
    assert.equal(d.branch, 'explore');
    p.instanceAdded(0, { kvCapacityTokens: 100 }, 0);
    p.instanceRemoved(1, 0);
    p.instanceAdded(1, { kvCapacityTokens: 100 }, 0);
    p.tree.match(concat(shared, run(100, 16)));
    assert.equal(p.tree.cachedOn(1), 0);
    p.tree.checkInvariants();
  });

  it('applies eviction reports', () => {
    const p = addInstances(new CacheAwarePolicy(), 2);
    const prompt = concat(shared, run(0, 16));
    routeIdle(p, prompt);
    p.instanceEvicted(0, prompt, 32, 1);
    p.tree.match(prompt);
    assert.equal(p.tree.cachedOn(0), 32);
    p.tree.checkInvariants();
  });

  it('keeps every tree within maxTreeTokens', () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.record({ prefix: fc.integer({ min: 0, max: 4 }), len: fc.integer({ min: 0, max: 120 }) }),
          {
            maxLength: 60,
          },
        ),
        (requests) => {
          const max = 200;
          const p = addInstances(new CacheAwarePolicy({ maxTreeTokens: max }), 3);
          let now = 0;
          for (const r of requests) {
            p.route(req(concat(run(r.prefix * 10_000, 50), run(now * 1000, r.len))), now++);
            for (let i = 0; i < 3; i++) assert.ok(p.tree.usedTokens(i) <= max);
          }
          p.tree.checkInvariants();
        },
      ),
    );
  });
});
