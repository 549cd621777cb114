import { withDefaults } from '../with-defaults.ts';
import { admitInOrder, kvForAdmitted, noReserve } from './admission.ts';
import type { PreemptionPlan, QueuedRequest, QueuePolicy, RunningRequest } from './types.ts';

export interface SplitwiseMixedOptions {
  /**
   * Seconds a preempted request ("token") waits behind new prompts; past it, it goes ahead of them
   * (the longest-waiting first). The paper says only that tokens gain priority with age. Default 1 s:
   * it bounds how long prompts can starve a preempted token, and a token stalled that long has already
   * missed any TBT target, so past it its own latency, not the next prompt's, should decide. Above 0:
   * a victim must not outrank, in the same iteration, the prompt it was preempted for.
   */
  readonly agingSeconds?: number;
  /**
   * Preemptions (for any reason) after which a request is never preempted for a prompt again. The paper
   * gives no value. Default 1: each preemption recomputes the prompt and the output so far, so one
   * bounds a request's extra prefill work to one recomputation, and no request is preempted twice for
   * prompts.
   */
  readonly maxPreemptions?: number;
}

export const splitwiseMixedDefaults: Required<SplitwiseMixedOptions> = { agingSeconds: 1, maxPreemptions: 1 };

/**
 * Splitwise's mixed-machine scheduler (ISCA 24, §IV-C): "prompts are scheduled immediately, preempting
 * tokens if capacity is lacking. Tokens gain priority with age, and preemptions per request are
 * capped." Waiting order: preempted requests that have waited `agingSeconds` since their preemption
 * (the longest-waiting first), then new prompts (queue order), then the other preempted ones (queue
 * order); admission stops at the first that does not fit, as every policy. When that one is a new
 * prompt, `preemptFor` offers as victims the decoding requests preempted fewer than `maxPreemptions`
 * times, the youngest (latest to join the queue) first.
 */
export function createSplitwiseMixedPolicy(options: SplitwiseMixedOptions = {}): QueuePolicy {
  const { agingSeconds, maxPreemptions } = withDefaults(splitwiseMixedDefaults, options);
  if (!(agingSeconds > 0) || !Number.isFinite(agingSeconds))
    throw new Error(`splitwise-mixed: agingSeconds must be finite and > 0, got ${agingSeconds}`);
  if (!Number.isInteger(maxPreemptions) || maxPreemptions < 0)
    throw new Error(`splitwise-mixed: maxPreemptions must be an integer >= 0, got ${maxPreemptions}`);
  const order: number[] = [];
  const aged = (r: QueuedRequest, now: number): boolean =>
    r.preemptedAt !== undefined && now - r.preemptedAt >= agingSeconds;

  function fillOrder(waiting: readonly QueuedRequest[], now: number): void {
    order.length = 0;
    for (let i = 0; i < waiting.length; i++) {
      const r = waiting[i]!;
      if ((r.preemptions ?? 0) > 0 && aged(r, now)) order.push(i);
    }
    order.sort((a, b) => waiting[a]!.preemptedAt! - waiting[b]!.preemptedAt! || a - b);
    for (let i = 0; i < waiting.length; i++) if ((waiting[i]!.preemptions ?? 0) === 0) order.push(i);
    for (let i = 0; i < waiting.length; i++) {
      const r = waiting[i]!;
      if ((r.preemptions ?? 0) > 0 && !aged(r, now)) order.push(i);
    }
  }

  function select(waiting: readonly QueuedRequest[], ctx: Parameters<QueuePolicy['select']>[1]) {
    fillOrder(waiting, ctx.now);
    let position = 0;
    return admitInOrder(waiting, ctx, () => (position < order.length ? order[position++]! : -1), noReserve);
  }

  return {
    name: 'splitwise-mixed',
    preempts: true,
    reserveTokens: noReserve,
    select,
    preemptFor(waiting, running, ctx): PreemptionPlan | undefined {
      const admitted = select(waiting, ctx);
      const before = kvForAdmitted(admitted, order.length, ctx);
      if (before === undefined) return undefined;
      const target = waiting[order[admitted.length]!]!;
      if ((target.preemptions ?? 0) > 0) return undefined;
      const kvTokens = before + Math.max(0, target.promptTokens);
      const victims: RunningRequest[] = [];
      for (let i = running.length - 1; i >= 0; i--) {
        const r = running[i]!;
        if (r.preemptions < maxPreemptions) victims.push(r);
      }
      if (victims.length === 0) return undefined;
      // Youngest first; among equals, the most recently admitted first (vLLM's preemption order).
      victims.sort((a, b) => b.enqueuedAt - a.enqueuedAt);
      return { target, kvTokens, victims };
    },
  };
}
