import { admitInOrder, cachedPromptTokens, noReserve } from './admission.ts';
import { IndexMaxHeap } from './index-heap.ts';
import type { QueuePolicy } from './types.ts';

/**
 * Longest prefix match (SGLang's default): most cached tokens first, ties in queue order; stops at
 * the first request that does not fit. Maximises reuse but can starve requests with little cached.
 */
export function createLpmPolicy(): QueuePolicy {
  const heap = new IndexMaxHeap();
  return {
    name: 'lpm',
    preempts: true,
    reserveTokens: noReserve,
    select(waiting, ctx) {
      heap.reset(waiting.length);
      for (let i = 0; i < waiting.length; i++) {
        heap.setKey(i, cachedPromptTokens(waiting[i]!));
      }
      heap.build();
      return admitInOrder(waiting, ctx, () => heap.pop(), noReserve);
    },
  };
}
