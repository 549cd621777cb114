import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createPriorityGroupsPolicy } from '../../../src/core/replica-queue/priority-groups.ts';
import type { QueuedRequest } from '../../../src/core/replica-queue/types.ts';
import { ctx, ids, req } from './helpers.ts';

/** `count` requests of 100 prompt tokens with `cached` of them cached, ids prefix0, prefix1, ... */
function many(prefix: string, count: number, cached: number): QueuedRequest[] {
  return Array.from({ length: count }, (_, i) => req(`${prefix}${i}`, 100, cached));
}

function countByPrefix(admitted: readonly QueuedRequest[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const { id } of admitted) {
    const prefix = id.replace(/\d+$/, '');
    counts[prefix] = (counts[prefix] ?? 0) + 1;
  }
  return counts;
}

describe('priority-groups', () => {
  it('takes 10, 9, ..., 1 from groups 9..0 when 55 slots are free', () => {
    const waiting = Array.from({ length: 10 }, (_, g) => many(`g${g}-`, 20, g * 10 + 5)).flat();
    const admitted = createPriorityGroupsPolicy().select(waiting, ctx({ maxRequests: 55 }));
    const counts = countByPrefix(admitted);
    for (let g = 0; g < 10; g++) assert.equal(counts[`g${g}-`], g + 1, `group ${g}`);
  });

  it('serves each group first come, first served', () => {
    const waiting = [...many('low', 3, 0), ...many('high', 3, 100)];
    const admitted = createPriorityGroupsPolicy().select(waiting, ctx());
    assert.deepEqual(
      ids(admitted).filter((id) => id.startsWith('high')),
      ['high0', 'high1', 'high2'],
    );
    assert.deepEqual(
      ids(admitted).filter((id) => id.startsWith('low')),
      ['low0', 'low1', 'low2'],
    );
  });

  it('gives the share of empty groups to the non-empty ones', () => {
    // Only groups 0 (weight 1) and 9 (weight 10): 11 slots -> 1 and 10.
    const waiting = [...many('miss', 20, 0), ...many('hit', 20, 100)];
    const counts = countByPrefix(createPriorityGroupsPolicy().select(waiting, ctx({ maxRequests: 11 })));
    assert.deepEqual(counts, { hit: 10, miss: 1 });
  });

  it('gives the share of a group that runs out to the others', () => {
    const waiting = [...many('miss', 20, 0), ...many('hit', 2, 100)];
    const counts = countByPrefix(createPriorityGroupsPolicy().select(waiting, ctx({ maxRequests: 11 })));
    assert.deepEqual(counts, { hit: 2, miss: 9 });
  });

  it('admits the quotas highest group first, so a memory-limited batch keeps the hits', () => {
    const waiting = [...many('miss', 5, 0), ...many('hit', 20, 100)];
    // 11 slots: quotas 10 (hit) and 1 (miss), the hits first.
    const admitted = createPriorityGroupsPolicy().select(waiting, ctx({ maxRequests: 11 }));
    assert.deepEqual(ids(admitted), [...ids(many('hit', 10, 100)), 'miss0']);
  });

  it('stops at the first request in its order that does not fit', () => {
    const waiting = [req('miss', 1000, 0), req('hit0', 100, 100), req('hit1', 100, 100)];
    // Order: hit0, hit1, miss; 'miss' needs 1000 KV tokens, only 500 are free.
    const admitted = createPriorityGroupsPolicy().select(waiting, ctx({ freeKvTokens: 500 }));
    assert.deepEqual(ids(admitted), ['hit0', 'hit1']);
  });

  it('does not thrash: with a 512-token budget the hits come before any long miss (review 2.5)', () => {
    // Interleaved in the queue: a fully cached 2000-token hit, then a 10,000-token miss, 20 times.
    const waiting = Array.from({ length: 20 }, (_, i) => [
      req(`hit${i}`, 2000, 2000),
      req(`miss${i}`, 10_000, 0),
    ]).flat();
    const admitted = createPriorityGroupsPolicy().select(
      waiting,
      ctx({ tokenBudget: 512, maxRequests: 256 }),
    );
    // Each hit costs 1 prefill token: all 20 fit; then one miss takes the rest of the budget, chunked.
    // Quotas over those 21: 19 hits, 2 misses (weights 10 and 1, largest remainder to the misses).
    const hits = ids(admitted).filter((id) => id.startsWith('hit'));
    assert.deepEqual(hits, ids(admitted).slice(0, hits.length), 'every hit before any miss');
    assert.equal(hits.length, 19);
    assert.deepEqual(ids(admitted).slice(hits.length), ['miss0']);
  });

  it('fills what the quotas leave, in the same order', () => {
    // Quotas over n = 3 (all fit): hit 3 x 10/11 -> 2 or 3; whatever the split, everything fits and is admitted.
    const waiting = [...many('miss', 1, 0), ...many('hit', 2, 100)];
    assert.deepEqual(ids(createPriorityGroupsPolicy().select(waiting, ctx())), ['hit0', 'hit1', 'miss0']);
  });

  it("rotation (the authors' fcfs-mpq): one non-empty group per iteration, downward, at most (g + 1) x 10", () => {
    const policy = createPriorityGroupsPolicy({ mode: 'rotation' });
    const waiting = [...many('g0-', 30, 0), ...many('g9-', 120, 100), ...many('g5-', 80, 55)];
    const round = () => countByPrefix(policy.select(waiting, ctx()));
    assert.deepEqual(round(), { 'g9-': 100 });
    assert.deepEqual(round(), { 'g5-': 60 });
    assert.deepEqual(round(), { 'g0-': 10 });
    assert.deepEqual(round(), { 'g9-': 100 }, 'wraps to the top');
    assert.deepEqual(ids(policy.select(many('g5-', 3, 55), ctx())), ['g5-0', 'g5-1', 'g5-2'], 'FCFS');
    assert.throws(() => createPriorityGroupsPolicy({ mode: 'stride' as 'rotation' }), /mode/);
  });

  it('honours a configured number of groups', () => {
    const waiting = [...many('low', 10, 40), ...many('high', 10, 60)];
    // P = 2: 40% cached -> group 0, 60% -> group 1; 3 slots -> 1 and 2.
    const counts = countByPrefix(
      createPriorityGroupsPolicy({ groups: 2 }).select(waiting, ctx({ maxRequests: 3 })),
    );
    assert.deepEqual(counts, { high: 2, low: 1 });
    assert.throws(() => createPriorityGroupsPolicy({ groups: 0 }), /groups/);
    assert.throws(() => createPriorityGroupsPolicy({ groups: 2.5 }), /groups/);
  });
});
