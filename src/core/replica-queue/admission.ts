import type { QueueContext, QueuedRequest } from './types.ts';

/** New KV tokens the request's prompt needs: the part not already cached on this replica. */
export function uncachedTokens(request: QueuedRequest): number {
  const prompt = Math.max(0, request.promptTokens);
  const cached = Math.min(prompt, Math.max(0, request.cachedTokens));
  return prompt - cached;
}

/** Prompt tokens already cached on this replica, clamped to [0, promptTokens]. */
export function cachedPromptTokens(request: QueuedRequest): number {
  return Math.max(0, request.promptTokens) - uncachedTokens(request);
}

/**
 * Prefill tokens the request costs in the iteration budget. At least 1: a fully cached prompt
 * still recomputes its last token to get the logits of the first output token.
 */
export function prefillTokens(request: QueuedRequest): number {
  return Math.max(1, uncachedTokens(request));
}

/** Index into `waiting` of the next request to consider, or -1 when the policy has none left. */
export type NextIndex = () => number;

/**
 * Admits requests in the order `next` yields them, under the rules in types.ts: stops at the first
 * request whose KV need (uncached prompt + reserve) does not fit, when the slots run out, or when
 * the prefill budget is spent; a request larger than the remaining budget is admitted last (chunked).
 * `next` is only called while another request could still be admitted, so lazy orders stay cheap.
 */
export function admitInOrder(
  waiting: readonly QueuedRequest[],
  ctx: QueueContext,
  next: NextIndex,
  reserveTokens: (request: QueuedRequest) => number,
): QueuedRequest[] {
  const admitted: QueuedRequest[] = [];
  let freeKv = ctx.freeKvTokens;
  let budget = ctx.tokenBudget;
  while (admitted.length < ctx.maxRequests && budget >= 1) {
    const index = next();
    if (index < 0) break;
    const request = waiting[index]!;
    const kv = uncachedTokens(request) + reserveTokens(request);
    if (kv > freeKv) break;
    admitted.push(request);
    freeKv -= kv;
    // A negative budget means this one is chunked; the loop condition ends the iteration.
    budget -= prefillTokens(request);
  }
  return admitted;
}

/**
 * For `preemptFor` (prompts-first preemption): after a selection admitted `admitted` of the `ordered`
 * requests it considered, the `freeKvTokens` those admissions need, each request's whole prompt (a cached
 * prefix the engine pins stops being evictable); undefined when no request is left, or no slot or prefill
 * budget is left for the next one.
 */
export function kvForAdmitted(
  admitted: readonly QueuedRequest[],
  ordered: number,
  ctx: QueueContext,
): number | undefined {
  if (admitted.length >= ctx.maxRequests || admitted.length >= ordered) return undefined;
  let kvTokens = 0;
  let budget = ctx.tokenBudget;
  for (const r of admitted) {
    kvTokens += Math.max(0, r.promptTokens);
    budget -= Math.max(1, r.promptTokens - r.cachedTokens);
  }
  return budget < 1 ? undefined : kvTokens;
}

/** Reserve of the policies that preempt on memory pressure instead of reserving ahead. */
export function noReserve(): number {
  return 0;
}

/** Yields 0, 1, 2, ... up to `length - 1`: queue order. */
export function queueOrder(length: number): NextIndex {
  let position = 0;
  return () => (position < length ? position++ : -1);
}
