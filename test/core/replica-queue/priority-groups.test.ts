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

  it('puts the top group first and interleaves, so a memory-limited batch is still mixed', () => {
    const waiting = [...many('miss', 5, 0), ...many('hit', 20, 100)];
    // 11 slots: quotas 10 (hit) and 1 (miss); the miss request sits mid-way in the mix.
    const admitted = createPriorityGroupsPolicy().select(waiting, ctx({ maxRequests: 11 }));
    assert.equal(admitted[0]!.id, 'hit0');
    assert.equal(
      admitted.findIndex((r) => r.id === 'miss0'),
      5,
    );
  });

  it('stops at the first request in its order that does not fit', () => {
    const waiting = [req('miss', 1000, 0), req('hit0', 100, 100), req('hit1', 100, 100)];
    // Order: hit0, miss, hit1 (quotas 2 and 1); 'miss' needs 1000 KV tokens, only 500 are free.
    const admitted = createPriorityGroupsPolicy().select(waiting, ctx({ freeKvTokens: 500 }));
    assert.deepEqual(ids(admitted), ['hit0']);
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
