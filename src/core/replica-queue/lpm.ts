import { admitInOrder, cachedPromptTokens, noReserve } from './admission.ts';
import type { QueuedRequest, QueuePolicy } from './types.ts';

export interface LpmOptions {
  /**
   * Above this many waiting requests the queue is not sorted (SGLang turns its prefix matching and
   * sorting off there, `_determine_active_policy`: 128, hard-coded): it is served in the order it was
   * left in, the last sort's order with later arrivals after it. Infinity: always sorted.
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
 * queue is one list sorted in place: an unsorted round serves it in its last sorted order, with the
 * requests that joined since appended in arrival order (not strict arrival order).
 */
export function createLpmPolicy(options: LpmOptions = {}): QueuePolicy {
  const fcfsAbove = options.fcfsAbove ?? LPM_FCFS_ABOVE;
  if (!(fcfsAbove >= 0)) throw new Error(`lpm: fcfsAbove must be >= 0, got ${fcfsAbove}`);
  /** The queue's ids in the order SGLang's list keeps them (admitted ones dropped at each round). */
  let kept: string[] = [];
  const byId = new Map<string, QueuedRequest>();
  return {
    name: 'lpm',
    preempts: true,
    reserveTokens: noReserve,
    select(waiting, ctx) {
      byId.clear();
      for (const r of waiting) byId.set(r.id, r);
      const list: QueuedRequest[] = [];
      for (const id of kept) {
        const r = byId.get(id);
        if (r === undefined) continue;
        list.push(r);
        byId.delete(id);
      }
      // Newcomers (and preempted requests back in the queue) join at the end, in queue order.
      for (const r of waiting) if (byId.has(r.id)) list.push(r);
      if (list.length <= fcfsAbove) {
        const cached = new Map(list.map((r) => [r.id, cachedPromptTokens(r)]));
        // Array.prototype.sort is stable: ties keep the list's order.
        list.sort((a, b) => cached.get(b.id)! - cached.get(a.id)!);
      }
      kept = list.map((r) => r.id);
      let next = 0;
      return admitInOrder(list, ctx, () => (next < list.length ? next++ : -1), noReserve);
    },
  };
}
