import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { KvCostPolicy } from '../../../src/core/policies/kv-cost.ts';
import { softmaxPickLowest } from '../../../src/core/policies/support/softmax-pick.ts';
import { Random } from '../../../src/core/random.ts';
import { addInstances, concat, req, run } from './helpers.ts';

const shared = run(1000, 64); // 4 blocks of 16
const done = (prompt: number) => ({ promptTokens: prompt, cachedTokens: 0, outputTokens: 1 });
const parts = (costs: readonly { instance: number; total: number; prefill?: number; load?: number }[]) =>
  costs.map((c) => [c.instance, c.prefill, c.load, c.total]);

describe('kv-cost', () => {
  it('prices prefill net of cached blocks plus decode blocks, and tracks active blocks', () => {
    const p = addInstances(new KvCostPolicy({ tieBreak: 'lowest-id' }), 2);
    const d1 = p.route(req(shared, 'r1'), 0);
    // [instance, adjusted prefill, decode, cost]
    assert.deepEqual(parts(d1.costs), [
      [0, 4, 4, 8],
      [1, 4, 4, 8],
    ]);
    assert.equal(d1.instance, 0);
    assert.equal(d1.branch, 'load');
    assert.deepEqual(p.activeBlocks(0), { prefill: 4, decode: 4 });

    // 96 tokens = 6 blocks, 4 of them cached on 0: 0 costs (4 + 6 - 4) + (4 + 6) = 16, 1 costs 6 + 6.
    const d2 = p.route(req(concat(shared, run(0, 32)), 'r2'), 0);
    assert.deepEqual(parts(d2.costs), [
      [0, 6, 10, 16],
      [1, 6, 6, 12],
    ]);
    assert.equal(d2.instance, 1);
    assert.equal(d2.matchedTokens, 0);
    assert.deepEqual(p.activeBlocks(1), { prefill: 6, decode: 6 });

    p.requestFirstToken('r1', 1);
    assert.deepEqual(p.activeBlocks(0), { prefill: 0, decode: 4 });

    // 104 tokens = 7 blocks; both instances now cache the shared 4 blocks (r2 was inserted on 1).
    const d3 = p.route(req(concat(shared, run(200, 40)), 'r3'), 1);
    assert.deepEqual(parts(d3.costs), [
      [0, 3, 11, 14],
      [1, 9, 13, 22],
    ]);
    assert.equal(d3.instance, 0);
    assert.equal(d3.branch, 'cache-hit');
    assert.equal(d3.matchedTokens, 64);
    assert.deepEqual(p.activeBlocks(0), { prefill: 3, decode: 11 });

    p.requestFinished('r2', 2, done(96)); // no first token seen: its prefill is released too
    p.requestFailed('r3', 2);
    p.requestFinished('r1', 2, done(64));
    for (const i of [0, 1]) assert.deepEqual(p.activeBlocks(i), { prefill: 0, decode: 0 });
    p.tree.checkInvariants();
  });

  it('applies prefillLoadScale and overlapCredit, and counts only whole cached blocks', () => {
    const p = addInstances(
      new KvCostPolicy({ tieBreak: 'lowest-id', prefillLoadScale: 2, overlapCredit: 0.5 }),
      2,
    );
    p.route(req(concat(shared, run(0, 6)), 'a'), 0); // 70 tokens: 5 blocks, cached 70 on 0
    // 96 tokens: 6 blocks; 70 cached tokens = 4 whole blocks, credit 2.
    // 0: 2 x max(5 + 6 - 2, 0) + (5 + 6) = 29; 1: 2 x 6 + 6 = 18.
    const d = p.route(req(concat(shared, run(0, 6), run(500, 26))), 0);
    assert.deepEqual(
      d.costs.map((c) => [c.total, c.matchedTokens]),
      [
        [29, 64],
        [18, 0],
      ],
    );
  });

  it('predicts LRU eviction within the KV capacity, never of running requests', () => {
    const p = addInstances(new KvCostPolicy(), 1, 64);
    const other = run(5000, 64);
    p.route(req(shared, 'a'), 0);
    p.route(req(other, 'b'), 1); // both pinned: 128 tokens over a capacity of 64
    assert.equal(p.tree.usedTokens(0), 128);
    p.requestFinished('a', 2, done(64)); // now the older prompt can go
    assert.equal(p.tree.usedTokens(0), 64);
    assert.equal(p.route(req(shared), 3).branch, 'load');
    p.tree.checkInvariants();
  });

  it('applies eviction reports', () => {
    const p = addInstances(new KvCostPolicy(), 1);
    p.route(req(shared, 'a'), 0);
    p.requestFinished('a', 1, done(64));
    p.instanceEvicted(0, shared, 16, 2);
    assert.equal(p.route(req(shared), 3).matchedTokens, 16);
  });

  it('does not let requests of a removed instance touch its successor', () => {
    const p = addInstances(new KvCostPolicy(), 1);
    p.route(req(shared, 'a'), 0);
    p.instanceRemoved(0, 1);
    p.instanceAdded(0, { kvCapacityTokens: 1000 }, 2);
    p.requestFinished('a', 3, done(64));
    assert.deepEqual(p.activeBlocks(0), { prefill: 0, decode: 0 });
    p.tree.checkInvariants();
  });

  it('breaks cost ties with the seeded random stream by default', () => {
    const picks = (seed: number) => {
      const p = addInstances(new KvCostPolicy({ seed }), 4);
      return Array.from({ length: 40 }, (_, i) => {
        const r = req(run(i * 100, 16));
        const d = p.route(r, 0);
        p.requestFailed(r.id, 0);
        return d.instance;
      });
    };
    assert.deepEqual(picks(1), picks(1));
    assert.notDeepEqual(picks(1), picks(2));
    assert.equal(new Set(picks(1)).size, 4);
  });

  it('keeps defaults for options given as undefined', () => {
    const p = addInstances(
      new KvCostPolicy({ blockSize: undefined, seed: undefined, tieBreak: 'lowest-id' }),
      1,
    );
    assert.deepEqual(
      p.route(req(run(0, 33)), 0).costs.map((c) => c.total),
      [6], // 3 blocks of 16: prefill 3 + decode 3
    );
  });

  it('samples with temperature from the seeded stream', () => {
    const picks = (seed: number) => {
      const p = addInstances(new KvCostPolicy({ seed, temperature: 1 }), 3);
      return Array.from({ length: 30 }, () => p.route(req(run(0, 16)), 0).instance);
    };
    assert.deepEqual(picks(3), picks(3));
  });
});

describe('softmaxPickLowest', () => {
  it('favours low costs as exp(-normalised cost / temperature)', () => {
    const random = new Random(11);
    const costs = new Float64Array([10, 20]);
    let low = 0;
    const draws = 20_000;
    for (let i = 0; i < draws; i++) if (softmaxPickLowest(costs, 2, 1, random) === 0) low++;
    const expected = 1 / (1 + Math.exp(-1));
    assert.ok(Math.abs(low / draws - expected) < 0.02, `${low / draws} vs ${expected}`);
  });

  it('is uniform over equal costs and nearly greedy at a low temperature', () => {
    const random = new Random(12);
    const equal = new Float64Array([5, 5, 5, 5]);
    const seen = new Set<number>();
    for (let i = 0; i < 200; i++) seen.add(softmaxPickLowest(equal, 4, 1, random));
    assert.equal(seen.size, 4);
    const costs = new Float64Array([3, 1, 2]);
    for (let i = 0; i < 200; i++) assert.equal(softmaxPickLowest(costs, 3, 0.01, random), 1);
  });
});
