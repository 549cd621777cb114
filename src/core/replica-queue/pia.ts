import { withDefaults } from '../with-defaults.ts';
import { admitInOrder, noReserve } from './admission.ts';
import type { QueueContext, QueuedRequest, QueuePolicy } from './types.ts';

export interface PiaOptions {
  /** Requests per static batch. Default 16, a round value of ours (PiA's batch size is a setting). */
  readonly batchSize?: number;
}

export const piaDefaults: Required<PiaOptions> = { batchSize: 16 };

/**
 * PiA (Zheng et al., "Response Length Perception and Sequence Scheduling", seed 002's [41]): static
 * batches of requests with similar predicted output lengths, so that a batch's members end together
 * and few slots idle while its longest runs. A batch is formed only when nothing runs
 * (`runningRequests` 0; static batching: no request joins a running batch): the oldest waiting
 * request and the `batchSize - 1` others whose predictions are closest to its own (ties in queue
 * order); its members are then admitted as memory and the prefill budget allow, over as many
 * iterations as that takes, before any other request. Unpredicted requests count as predicted
 * length 0. What we assume: PiA sorted an offline set and served the batches shortest first; online,
 * batches are formed around the oldest request so that none starves. PiA's failure collection
 * (a request outrunning its batch's budget is stopped and rescheduled) is not modelled: an outrun
 * member simply keeps its batch open to the end. Preempted members wait for the next batch.
 */
export function createPiaPolicy(options: PiaOptions = {}): QueuePolicy {
  const { batchSize } = withDefaults(piaDefaults, options);
  if (!Number.isInteger(batchSize) || batchSize < 1)
    throw new Error(`pia: batchSize must be an integer >= 1, got ${batchSize}`);
  // The members of the batch being admitted, not yet admitted (ids, in admission order).
  let pending: string[] = [];

  function formBatch(waiting: readonly QueuedRequest[]): void {
    const head = waiting.reduce((a, b) => (b.enqueuedAt < a.enqueuedAt ? b : a));
    const target = head.predictedOutputTokens ?? 0;
    const distance = (r: QueuedRequest) => Math.abs((r.predictedOutputTokens ?? 0) - target);
    const others = waiting.filter((r) => r !== head);
    // A stable sort keeps queue order among equal distances.
    others.sort((a, b) => distance(a) - distance(b));
    pending = [head, ...others.slice(0, batchSize - 1)].map((r) => r.id);
  }

  return {
    name: 'pia',
    preempts: true,
    reserveTokens: noReserve,
    select(waiting: readonly QueuedRequest[], ctx: QueueContext) {
      if (waiting.length === 0) return [];
      const position = new Map<string, number>();
      for (let i = 0; i < waiting.length; i++) position.set(waiting[i]!.id, i);
      // Members no longer waiting (admitted since, or aborted) leave the list; the engine may admit
      // fewer than selected, so the list is trimmed by what still waits, not by what was selected.
      pending = pending.filter((id) => position.has(id));
      if (pending.length === 0) {
        if ((ctx.runningRequests ?? 0) > 0) return [];
        formBatch(waiting);
      }
      let next = 0;
      return admitInOrder(
        waiting,
        ctx,
        () => (next < pending.length ? position.get(pending[next++]!)! : -1),
        noReserve,
      );
    },
  };
}
