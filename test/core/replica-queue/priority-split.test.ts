import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import {
  nextGroupInMix,
  priorityGroup,
  proportionalSplit,
} from '../../../src/core/replica-queue/priority-split.ts';

const sum = (values: readonly number[]) => values.reduce((a, b) => a + b, 0);

describe('priorityGroup', () => {
  it("places 63 of 100 cached tokens in group 6 of 10 (the paper's example)", () => {
    assert.equal(priorityGroup(63, 100, 10), 6);
  });

  it('spans 0 (nothing cached) to P - 1 (fully cached)', () => {
    assert.equal(priorityGroup(0, 100, 10), 0);
    assert.equal(priorityGroup(9, 100, 10), 0);
    assert.equal(priorityGroup(99, 100, 10), 9);
    assert.equal(priorityGroup(100, 100, 10), 9);
    assert.equal(priorityGroup(100, 100, 1), 0);
  });

  it('is exact at multiples of 1/P', () => {
    assert.equal(priorityGroup(7, 10, 10), 7);
    assert.equal(priorityGroup(3, 10, 10), 3);
    assert.equal(priorityGroup(1, 3, 3), 1);
  });

  it('clamps odd inputs', () => {
    assert.equal(priorityGroup(0, 0, 10), 0);
    assert.equal(priorityGroup(500, 100, 10), 9);
    assert.equal(priorityGroup(-5, 100, 10), 0);
  });
});

describe('proportionalSplit', () => {
  it('splits 55 over 10 full groups as 1, 2, ..., 10 (top group 10)', () => {
    assert.deepEqual(proportionalSplit(55, new Array(10).fill(100)), [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
  });

  it('scales with the batch', () => {
    assert.deepEqual(proportionalSplit(110, new Array(10).fill(100)), [2, 4, 6, 8, 10, 12, 14, 16, 18, 20]);
  });

  it('gives the share of empty groups to the others, in proportion', () => {
    // Only groups 4 (weight 5) and 9 (weight 10) hold requests.
    const sizes = [0, 0, 0, 0, 50, 0, 0, 0, 0, 50];
    assert.deepEqual(proportionalSplit(15, sizes), [0, 0, 0, 0, 5, 0, 0, 0, 0, 10]);
  });

  it('gives what an exhausted group cannot use to the others', () => {
    // Group 9 would get 10 of 11 but holds 2; group 0 takes the rest.
    const sizes = [100, 0, 0, 0, 0, 0, 0, 0, 0, 2];
    assert.deepEqual(proportionalSplit(11, sizes), [9, 0, 0, 0, 0, 0, 0, 0, 0, 2]);
  });

  it('redistributes in cascade', () => {
    // Shares of 55: 1..10; groups 9 and 8 hold 1 each, so 53 go to groups 0..7 (weights 1..8, sum 36).
    const sizes = [100, 100, 100, 100, 100, 100, 100, 100, 1, 1];
    const counts = proportionalSplit(55, sizes);
    assert.equal(counts[9], 1);
    assert.equal(counts[8], 1);
    assert.equal(sum(counts), 55);
    assert.deepEqual(counts.slice(0, 8), [2, 3, 4, 6, 7, 9, 10, 12]);
  });

  it('takes everything when the batch is larger than the queue', () => {
    assert.deepEqual(proportionalSplit(1000, [3, 0, 7]), [3, 0, 7]);
    assert.deepEqual(proportionalSplit(Number.POSITIVE_INFINITY, [3, 0, 7]), [3, 0, 7]);
  });

  it('gives nothing for an empty batch or queue', () => {
    assert.deepEqual(proportionalSplit(0, [3, 4]), [0, 0]);
    assert.deepEqual(proportionalSplit(5, [0, 0]), [0, 0]);
  });

  it('rounds by largest remainder, ties to the higher group', () => {
    // 1 place over weights 1 and 2: group 1 has the larger share.
    assert.deepEqual(proportionalSplit(1, [5, 5]), [0, 1]);
    // 3 places over weights 1, 2, 3 (sum 6): shares 0.5, 1, 1.5 -> tie at .5 goes to group 2.
    assert.deepEqual(proportionalSplit(3, [5, 5, 5]), [0, 1, 2]);
  });

  it('sums to min(total, sizes), caps at sizes, and never favours a lower group', () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 0, max: 30 }), { minLength: 1, maxLength: 12 }),
        fc.integer({ min: 0, max: 400 }),
        (sizes, total) => {
          const counts = proportionalSplit(total, sizes);
          assert.equal(counts.length, sizes.length);
          assert.equal(sum(counts), Math.min(total, sum(sizes)));
          counts.forEach((count, g) => {
            assert.ok(Number.isInteger(count) && count >= 0 && count <= sizes[g]!);
          });
          for (let high = 0; high < sizes.length; high++) {
            if (counts[high]! === sizes[high]!) continue;
            for (let low = 0; low < high; low++) assert.ok(counts[high]! >= counts[low]!);
          }
        },
      ),
    );
  });
});

function mixSequence(quotas: readonly number[]): number[] {
  const taken = new Uint32Array(quotas.length);
  const sequence: number[] = [];
  for (let g = nextGroupInMix(quotas, taken); g >= 0; g = nextGroupInMix(quotas, taken)) {
    sequence.push(g);
    taken[g]!++;
  }
  return sequence;
}

describe('nextGroupInMix', () => {
  it('interleaves so that even a short batch spans several groups, top first', () => {
    const sequence = mixSequence([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    assert.deepEqual(sequence.slice(0, 10), [9, 8, 7, 6, 5, 4, 3, 9, 8, 2]);
  });

  it('uses every quota exactly and keeps every prefix near the exact proportion', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 25 }), { minLength: 1, maxLength: 12 }), (quotas) => {
        const total = sum(quotas);
        const sequence = mixSequence(quotas);
        assert.equal(sequence.length, total);
        const seen = quotas.map(() => 0);
        sequence.forEach((g, k) => {
          seen[g]!++;
          quotas.forEach((quota, h) => {
            assert.ok(Math.abs(seen[h]! - ((k + 1) * quota) / total) < 2);
          });
        });
        assert.deepEqual(seen, quotas);
      }),
    );
  });
});
