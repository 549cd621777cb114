import { withDefaults } from '../with-defaults.ts';
import { admitInOrder, noReserve } from './admission.ts';
import { IndexMaxHeap } from './index-heap.ts';
import type { QueuePolicy } from './types.ts';

export interface LtrOptions {
  /**
   * Seconds of waiting (since it joined the queue, or since its last preemption) after which a
   * request goes ahead of every ranked one, the longest-waiting first: the starvation guard. Default
   * 5 s, a round value of ours: LTR promotes a request after a number of scheduling rounds without
   * service, which depends on its engine's iteration rate.
   */
  readonly starvationSeconds?: number;
}

export const ltrDefaults: Required<LtrOptions> = { starvationSeconds: 5 };

/**
 * LTR (Fu et al., "Efficient LLM Scheduling by Learning to Rank", seed 002's [6]): waiting requests in
 * increasing predicted output length, where only the order of the predictions matters (a ranking
 * model's scores: `rank-oracle`, whose Kendall tau is configurable); unpredicted ones last, in queue
 * order. A request that has waited `starvationSeconds` goes first (LTR's starvation prevention;
 * time-based here). Preempts for memory as fcfs does; admission stops at the first that does not fit.
 */
export function createLtrPolicy(options: LtrOptions = {}): QueuePolicy {
  const { starvationSeconds } = withDefaults(ltrDefaults, options);
  if (!(starvationSeconds > 0))
    throw new Error(`ltr: starvationSeconds must be > 0, got ${starvationSeconds}`);
  const heap = new IndexMaxHeap();
  return {
    name: 'ltr',
    preempts: true,
    reserveTokens: noReserve,
    select(waiting, ctx) {
      heap.reset(waiting.length);
      for (let i = 0; i < waiting.length; i++) {
        const r = waiting[i]!;
        const waited = ctx.now - (r.preemptedAt ?? r.enqueuedAt);
        // Starved requests above every ranked one (keys > 0), the longest-waiting first; the rest by
        // score, smallest first (keys <= 0).
        heap.setKey(
          i,
          waited >= starvationSeconds ? 1 + waited : -(r.predictedOutputTokens ?? Number.POSITIVE_INFINITY),
        );
      }
      heap.build();
      return admitInOrder(waiting, ctx, () => heap.pop(), noReserve);
    },
  };
}
