import { withDefaults } from '../with-defaults.ts';
import { admitInOrder, noReserve, uncachedTokens } from './admission.ts';
import { IndexMaxHeap } from './index-heap.ts';
import type { QueuedRequest, QueuePolicy } from './types.ts';

export interface LarryOptions {
  /**
   * Weight of waiting time against memory, in score units per second of waiting; the memory term
   * is (queue length) x (fraction of KV capacity), so with alpha = 1 one second of waiting offsets
   * a request using 1/|Q| of the KV capacity. Low values favour small prompts (better p50); very
   * large values (the paper: above 1000) degenerate to FCFS. Default 1.
   */
  readonly alpha?: number;
}

export const defaultLarryAlpha = 1;

export const larryDefaults: Required<LarryOptions> = { alpha: defaultLarryAlpha };

/**
 * LARRY's score (Eq. 1 of the load-balancer paper, RECONSTRUCTED: the equation was lost):
 * `alpha * wait - |Q| * m`, m = uncached prompt tokens / KV capacity. Only the prompt counts as
 * memory, as in the paper; under prefix caching only its uncached part needs new KV.
 */
export function larryScore(
  request: QueuedRequest,
  now: number,
  queueLength: number,
  kvCapacityTokens: number,
  alpha: number,
): number {
  const memoryShare = kvCapacityTokens > 0 ? uncachedTokens(request) / kvCapacityTokens : 0;
  return alpha * (now - request.enqueuedAt) - queueLength * memoryShare;
}

/**
 * LARRY (Load-Adaptive Request Reordering): decreasing score, ties in queue order; stops at the
 * first request that does not fit, as the paper specifies. A long queue pushes large prompts back;
 * waiting time pulls every request forward, so none starves.
 */
export function createLarryPolicy(options: LarryOptions = {}): QueuePolicy {
  const { alpha } = withDefaults(larryDefaults, options);
  if (!Number.isFinite(alpha) || alpha < 0)
    throw new Error(`larry: alpha must be finite and >= 0, got ${alpha}`);
  const heap = new IndexMaxHeap();
  return {
    name: 'larry',
    preempts: true,
    reserveTokens: noReserve,
    select(waiting, ctx) {
      heap.reset(waiting.length);
      for (let i = 0; i < waiting.length; i++) {
        heap.setKey(i, larryScore(waiting[i]!, ctx.now, waiting.length, ctx.kvCapacityTokens, alpha));
      }
      heap.build();
      return admitInOrder(waiting, ctx, () => heap.pop(), noReserve);
    },
  };
}
