import { admitInOrder, noReserve, queueOrder } from './admission.ts';
import type { QueuePolicy } from './types.ts';

/**
 * First come, first served (vLLM, SGLang, TensorRT-LLM): queue order, stopping at the first request
 * that does not fit (head-of-line blocking). Running requests are preempted when decodes outgrow memory.
 */
export function createFcfsPolicy(): QueuePolicy {
  return {
    name: 'fcfs',
    preempts: true,
    reserveTokens: noReserve,
    select: (waiting, ctx) => admitInOrder(waiting, ctx, queueOrder(waiting.length), noReserve),
  };
}
