import { withDefaults } from '../with-defaults.ts';
import { admitInOrder, noReserve } from './admission.ts';
import { defaultPriorityGroups, nextGroupInMix, priorityGroup, proportionalSplit } from './priority-split.ts';
import type { QueuedRequest, QueuePolicy } from './types.ts';

export interface PriorityGroupsOptions {
  /** Number of priority groups P (integer >= 1). Default 10, as in the paper and the authors' code. */
  readonly groups?: number;
}

export const priorityGroupsDefaults: Required<PriorityGroupsOptions> = { groups: defaultPriorityGroups };

/**
 * Preble's local scheduler: requests fall into P groups by the share of their prompt cached here;
 * a batch of n places takes from each group in proportion to rank (weight g + 1), FCFS within a
 * group, with the unused share of empty or exhausted groups going to the others. The quotas are
 * computed for n = min(free slots, queue length) and the groups are interleaved so that whatever
 * prefix memory and budget allow is itself proportional; selection stops at the first request that
 * does not fit, as for the other policies. Bucketing is O(n) (a counting sort by group).
 *
 * Deviation noted: the authors' code serves one group per iteration, round-robin across iterations;
 * this follows the paper's proportional mix and keeps no state between iterations.
 */
export function createPriorityGroupsPolicy(options: PriorityGroupsOptions = {}): QueuePolicy {
  const { groups } = withDefaults(priorityGroupsDefaults, options);
  if (!Number.isInteger(groups) || groups < 1) {
    throw new Error(`priority-groups: groups must be an integer >= 1, got ${groups}`);
  }
  let byGroup = new Uint32Array(0);
  const sizes = new Array<number>(groups).fill(0);
  const starts = new Uint32Array(groups);
  const taken = new Uint32Array(groups);
  const groupOf = (request: QueuedRequest): number =>
    priorityGroup(request.cachedTokens, request.promptTokens, groups);

  return {
    name: 'priority-groups',
    preempts: true,
    reserveTokens: noReserve,
    select(waiting, ctx) {
      const n = waiting.length;
      if (byGroup.length < n) byGroup = new Uint32Array(Math.max(n, byGroup.length * 2));

      // Counting sort of queue positions by group; positions stay in queue order within a group.
      sizes.fill(0);
      for (const request of waiting) sizes[groupOf(request)]!++;
      let offset = 0;
      for (let g = 0; g < groups; g++) {
        starts[g] = offset;
        offset += sizes[g]!;
      }
      taken.fill(0);
      for (let i = 0; i < n; i++) {
        const g = groupOf(waiting[i]!);
        byGroup[starts[g]! + taken[g]!++] = i;
      }

      const quotas = proportionalSplit(Math.min(ctx.maxRequests, n), sizes);
      taken.fill(0);
      const next = (): number => {
        const g = nextGroupInMix(quotas, taken);
        return g < 0 ? -1 : byGroup[starts[g]! + taken[g]!++]!;
      };
      return admitInOrder(waiting, ctx, next, noReserve);
    },
  };
}
