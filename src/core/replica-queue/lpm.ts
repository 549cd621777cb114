import { admitInOrder, cachedPromptTokens, noReserve, queueOrder } from './admission.ts';
import type { QueuedRequest, QueuePolicy } from './types.ts';

export interface LpmOptions {
  /**
   * Above this many waiting requests the queue is not sorted (SGLang turns its prefix matching and
   * sorting off there, `_determine_active_policy`: 128, hard-coded): it is served in the order it was
   * left in, the last sort's order with later arrivals after. Infinity: always sorted.
   */
  readonly fcfsAbove?: number;
}

/** SGLang's threshold (schedule_policy.py): an lpm queue longer than this is not sorted. */
export const LPM_FCFS_ABOVE = 128;

export const lpmDefaults: Required<LpmOptions> = { fcfsAbove: LPM_FCFS_ABOVE };

/**
 * Longest prefix match (SGLang's default): most cached tokens first, ties in the order the queue is
 * in; stops at the first request that does not fit. Maximises reuse but can starve requests with
 * little cached, which SGLang bounds by not sorting a queue longer than `fcfsAbove`. As in SGLang the
 * queue is one list sorted in place, admitted requests leaving it at once: an unsorted round serves
 * it in its last sorted order, and the requests that joined since (new, or preempted and back) come
 * after, in queue order. Requests are told apart by object identity (an engine's request states are
 * stable objects), so the policy keeps the list between calls: one policy object per engine.
 */
export function createLpmPolicy(options: LpmOptions = {}): QueuePolicy {
  const fcfsAbove = options.fcfsAbove ?? LPM_FCFS_ABOVE;
  if (!(fcfsAbove >= 0)) throw new Error(`lpm: fcfsAbove must be >= 0, got ${fcfsAbove}`);
  /** SGLang's list after the last call: its order, less what that call admitted. */
  let kept: QueuedRequest[] = [];
  // Scratch, reused between calls.
  const present = new Set<QueuedRequest>();
  let keys = new Float64Array(0);
  const order: number[] = [];
  return {
    name: 'lpm',
    preempts: true,
    reserveTokens: noReserve,
    select(waiting, ctx) {
      present.clear();
      for (const r of waiting) present.add(r);
      let list: QueuedRequest[] = [];
      for (const r of kept) if (present.delete(r)) list.push(r);
      // Newcomers, and preempted requests back in the queue, join at the end in queue order.
      for (const r of waiting) if (present.has(r)) list.push(r);
      present.clear();
      if (list.length <= fcfsAbove) list = sortedByCached(list);
      const admitted = admitInOrder(list, ctx, queueOrder(list.length), noReserve);
      // Admission takes a prefix of the list.
      kept = admitted.length === 0 ? list : list.slice(admitted.length);
      return admitted;
    },
  };

  /** The list by cached prompt tokens, most first; ties keep the list's order (a stable sort). */
  function sortedByCached(list: QueuedRequest[]): QueuedRequest[] {
    const n = list.length;
    if (keys.length < n) keys = new Float64Array(Math.max(n, keys.length * 2));
    order.length = n;
    for (let i = 0; i < n; i++) {
      keys[i] = cachedPromptTokens(list[i]!);
      order[i] = i;
    }
    order.sort((a, b) => keys[b]! - keys[a]! || a - b);
    return order.map((i) => list[i]!);
  }
}
