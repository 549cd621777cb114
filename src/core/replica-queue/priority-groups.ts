import { withDefaults } from '../with-defaults.ts';
import { admitInOrder, noReserve } from './admission.ts';
import { defaultPriorityGroups, priorityGroup, proportionalSplit } from './priority-split.ts';
import type { QueuedRequest, QueuePolicy } from './types.ts';

/** How the groups share an iteration: the paper's proportional batch, or the authors' rotation. */
export type PriorityGroupsMode = 'proportional' | 'rotation';

export interface PriorityGroupsOptions {
  /** Number of priority groups P (integer >= 1). Default 10, as in the paper and the authors' code. */
  readonly groups?: number;
  /** 'proportional' (default, the paper's batch) or 'rotation' (the authors' fcfs-mpq). */
  readonly mode?: PriorityGroupsMode;
}

export const priorityGroupsDefaults: Required<PriorityGroupsOptions> = {
  groups: defaultPriorityGroups,
  mode: 'proportional',
};

/** Requests per rank the rotation admits from its group: (g + 1) x 10 for group g (the authors' k). */
export const rotationRequestsPerRank = 10;

/**
 * Preble's local scheduler (paper 3.3, Algorithm 3): requests fall into P groups by the share of
 * their prompt cached here (group g, P - 1 the highest), FCFS within a group.
 *
 * 'proportional' (the default, the reproduction of the paper): "a batch of n" takes from each
 * group in proportion to rank (weight g + 1; 10, 9, ..., 1 of 55), the unused share of empty or
 * exhausted groups going to the others. n is what this iteration can admit: the requests that
 * fit (slots, KV, the chunked-prefill budget, a larger one last) taken highest group first. The
 * quotas are then admitted highest group first, and what room is left goes to the rest in the
 * same order. Selection stops at the first request that does not fit, as for the other policies.
 * (Computing quotas over the free slots instead, and interleaving groups, let each iteration admit
 * one hit then a budget-exhausting miss: the thrash of review 2.5.)
 *
 * 'rotation' (the authors' fcfs-mpq, model_rpc.py): each iteration serves one non-empty group,
 * rotating downward from the top (wrapping), at most (g + 1) x 10 of its requests, FCFS. This mode
 * keeps the group to serve next between calls, the only queue policy state that outlives a call.
 *
 * Bucketing is O(n) (a counting sort by group).
 */
export function createPriorityGroupsPolicy(options: PriorityGroupsOptions = {}): QueuePolicy {
  const { groups, mode } = withDefaults(priorityGroupsDefaults, options);
  if (!Number.isInteger(groups) || groups < 1) {
    throw new Error(`priority-groups: groups must be an integer >= 1, got ${groups}`);
  }
  if (mode !== 'proportional' && mode !== 'rotation') {
    throw new Error(`priority-groups: mode must be 'proportional' or 'rotation', got '${String(mode)}'`);
  }
  let byGroup = new Uint32Array(0);
  const sizes = new Array<number>(groups).fill(0);
  const starts = new Uint32Array(groups);
  const taken = new Uint32Array(groups);
  /** Rotation: the group to serve next (or the next non-empty one below it). */
  let nextGroup = groups - 1;
  const used = new Uint32Array(groups);
  const groupOf = (request: QueuedRequest): number =>
    priorityGroup(request.cachedTokens, request.promptTokens, groups);

  /** Positions of `waiting` by group, highest group first, FCFS within: byGroup[starts[g] ..]. */
  const bucket = (waiting: readonly QueuedRequest[]): void => {
    const n = waiting.length;
    if (byGroup.length < n) byGroup = new Uint32Array(Math.max(n, byGroup.length * 2));
    sizes.fill(0);
    for (const request of waiting) sizes[groupOf(request)]!++;
    let offset = 0;
    for (let g = groups - 1; g >= 0; g--) {
      starts[g] = offset;
      offset += sizes[g]!;
    }
    taken.fill(0);
    for (let i = 0; i < n; i++) {
      const g = groupOf(waiting[i]!);
      byGroup[starts[g]! + taken[g]!++] = i;
    }
  };

  /** Highest group first, each group FCFS, each up to `limits[g]` (all of it when absent). */
  const inGroupOrder = (limits?: readonly number[]): (() => number) => {
    taken.fill(0);
    let g = groups - 1;
    return () => {
      while (g >= 0 && taken[g]! >= (limits?.[g] ?? sizes[g]!)) g--;
      return g < 0 ? -1 : byGroup[starts[g]! + taken[g]!++]!;
    };
  };

  return {
    name: 'priority-groups',
    preempts: true,
    reserveTokens: noReserve,
    select(waiting, ctx) {
      if (waiting.length === 0) return [];
      bucket(waiting);
      if (mode === 'rotation') {
        let g = nextGroup;
        while (sizes[g] === 0) g = g === 0 ? groups - 1 : g - 1;
        nextGroup = g === 0 ? groups - 1 : g - 1;
        const limits = sizes.map((size, k) =>
          k === g ? Math.min(size, (g + 1) * rotationRequestsPerRank) : 0,
        );
        return admitInOrder(waiting, ctx, inGroupOrder(limits), noReserve);
      }
      // n: what this iteration can admit, taken highest group first.
      const n = admitInOrder(waiting, ctx, inGroupOrder(), noReserve).length;
      const quotas = proportionalSplit(n, sizes);
      // The quotas, highest group first; then the rest in the same order while room is left.
      const withinQuotas = inGroupOrder(quotas);
      let rest: (() => number) | null = null;
      const next = (): number => {
        if (rest === null) {
          const i = withinQuotas();
          if (i >= 0) return i;
          used.set(taken);
          rest = inGroupOrder();
          taken.set(used); // continue each group after its quota
        }
        return rest();
      };
      return admitInOrder(waiting, ctx, next, noReserve);
    },
  };
}
