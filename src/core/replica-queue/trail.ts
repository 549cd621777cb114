import { withDefaults } from '../with-defaults.ts';
import { admitInOrder, noReserve } from './admission.ts';
import { IndexMaxHeap } from './index-heap.ts';
import { predictedRemaining } from './predicted.ts';
import type { PreemptionPlan, QueueContext, QueuedRequest, QueuePolicy, RunningRequest } from './types.ts';

export interface TrailOptions {
  /**
   * TRAIL's c: a running request may be preempted for a new one only while it has generated fewer
   * than this many tokens. Default 0, never: seed 002 ran TRAIL+ with c = 0 in all its experiments
   * ("avoids frequent preemptions ... desirable for workloads with relatively short response lengths").
   */
  readonly preemptWithin?: number;
}

export const trailDefaults: Required<TrailOptions> = { preemptWithin: 0 };

/**
 * TRAIL (Shahout et al., seed 002's [26]): Shortest Predicted Remaining Processing Time. Waiting
 * requests in increasing predicted remaining output (`predictedOutputTokens - generatedTokens`, see
 * predicted.ts; ties and unpredicted requests in queue order), admission stopping at the first that
 * does not fit, as every policy. A running request is preempted (by recomputation, via `preemptFor`)
 * for a new request (nothing generated yet) with fewer predicted remaining tokens, and only while it
 * has generated fewer than `preemptWithin` tokens; victims: the longest predicted remaining first.
 * TRAIL predicts from the model's layer activations, refined every token; we take the predictor the
 * run gives (`oracle`: TRAIL+, seed 002's upper bound) and its re-prediction when outrun. Preemption
 * for memory growth stays the engine's (the latest admitted first).
 */
export function createTrailPolicy(options: TrailOptions = {}): QueuePolicy {
  const { preemptWithin } = withDefaults(trailDefaults, options);
  if (!Number.isInteger(preemptWithin) || preemptWithin < 0)
    throw new Error(`trail: preemptWithin must be an integer >= 0, got ${preemptWithin}`);
  const heap = new IndexMaxHeap();
  const order: number[] = [];

  function select(waiting: readonly QueuedRequest[], ctx: QueueContext): QueuedRequest[] {
    heap.reset(waiting.length);
    for (let i = 0; i < waiting.length; i++) heap.setKey(i, -predictedRemaining(waiting[i]!));
    heap.build();
    order.length = 0;
    return admitInOrder(
      waiting,
      ctx,
      () => {
        const i = heap.pop();
        if (i >= 0) order.push(i);
        return i;
      },
      noReserve,
    );
  }

  return {
    name: 'trail',
    preempts: true,
    reserveTokens: noReserve,
    select,
    preemptFor(waiting, running, ctx): PreemptionPlan | undefined {
      if (preemptWithin === 0) return undefined;
      const admitted = select(waiting, ctx);
      // The request the selection stopped at (popped but not admitted), if memory stopped it.
      if (admitted.length >= ctx.maxRequests || order.length === admitted.length) return undefined;
      const target = waiting[order[admitted.length]!]!;
      if ((target.generatedTokens ?? 0) > 0 || (target.preemptions ?? 0) > 0) return undefined;
      let kvTokens = Math.max(0, target.promptTokens);
      let budget = ctx.tokenBudget;
      for (const r of admitted) {
        // The whole prompt, cached or not: a cached prefix the engine pins stops being evictable.
        kvTokens += Math.max(0, r.promptTokens);
        budget -= Math.max(1, r.promptTokens - r.cachedTokens);
      }
      if (budget < 1) return undefined;
      const remaining = predictedRemaining(target);
      const victims: RunningRequest[] = running.filter(
        (r) => (r.generatedTokens ?? 0) < preemptWithin && predictedRemaining(r) > remaining,
      );
      if (victims.length === 0) return undefined;
      victims.sort((a, b) => predictedRemaining(b) - predictedRemaining(a));
      return { target, kvTokens, victims };
    },
  };
}
