import { withDefaults } from '../with-defaults.ts';
import { admitInOrder, queueOrder } from './admission.ts';
import type { QueuedRequest, QueuePolicy } from './types.ts';

export interface NoPreemptOptions {
  /** Output tokens reserved for a request without `maxOutputTokens`. Default 1024. */
  readonly defaultMaxOutputTokens?: number;
  /** The model's context length: prompt + output never exceeds it, which caps the reserve. Default Infinity. */
  readonly maxContextTokens?: number;
}

export const defaultMaxOutputTokens = 1024;

export const noPreemptDefaults: Required<NoPreemptOptions> = {
  defaultMaxOutputTokens,
  maxContextTokens: Number.POSITIVE_INFINITY,
};

/**
 * FCFS without preemption (TensorRT-LLM's guaranteed-no-evict, ORCA): a request is admitted only if
 * its uncached prompt plus its whole possible output fits, so running requests never outgrow memory.
 * Queue order, stopping at the first request that does not fit. The engine must keep each admitted
 * request's reserve out of `freeKvTokens` until the request finishes.
 *
 * "Whole possible output" is what the client allows, `max_tokens` (`maxOutputTokens`), or
 * `defaultMaxOutputTokens` when it gave none, capped by the context (seed 002: min(context, prompt +
 * user max response)); never the true output length, which no scheduler knows in advance. A request
 * usually stops well short of it, so the reserve over-reserves, which is this policy's known cost.
 */
export function createNoPreemptPolicy(options: NoPreemptOptions = {}): QueuePolicy {
  const { defaultMaxOutputTokens: defaultOutput, maxContextTokens: maxContext } = withDefaults(
    noPreemptDefaults,
    options,
  );
  if (!(defaultOutput >= 0) || !Number.isFinite(defaultOutput)) {
    throw new Error(`no-preempt: defaultMaxOutputTokens must be finite and >= 0, got ${defaultOutput}`);
  }
  if (!(maxContext > 0)) throw new Error(`no-preempt: maxContextTokens must be > 0, got ${maxContext}`);

  const reserveTokens = (request: QueuedRequest): number => {
    const output = Math.max(0, request.maxOutputTokens ?? defaultOutput);
    return Math.min(output, Math.max(0, maxContext - Math.max(0, request.promptTokens)));
  };
  return {
    name: 'no-preempt',
    preempts: false,
    reserveTokens,
    select: (waiting, ctx) => admitInOrder(waiting, ctx, queueOrder(waiting.length), reserveTokens),
  };
}
