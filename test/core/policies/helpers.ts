import type {
  GlobalPolicy,
  InstanceId,
  InstanceLoadSignal,
  RouteRequest,
  Tokens,
} from '../../../src/core/types.ts';
import { concat, seq } from '../../helpers/simple-cost-model.ts';

/** Add instances with the given KV capacity (Infinity: unknown). */
export function addInstances<P extends GlobalPolicy>(
  policy: P,
  ids: number | readonly InstanceId[],
  kvCapacityTokens = Number.POSITIVE_INFINITY,
): P {
  const list = typeof ids === 'number' ? Array.from({ length: ids }, (_, i) => i) : ids;
  for (const id of list) policy.instanceAdded(id, { kvCapacityTokens }, 0);
  return policy;
}

/** `length` consecutive token ids from `start`: distinct starts give disjoint prompts. */
export function run(start: number, length: number): Tokens {
  return seq(length, start);
}

export { concat };

let nextRequest = 0;

/** A request for `tokens` (a fresh id unless given). */
export function req(tokens: Tokens, id?: string, arrival = 0): RouteRequest {
  return { id: id ?? `auto-${nextRequest++}`, tokens, arrival };
}

/** Route a prompt and finish it at once, leaving nothing in flight; returns the chosen instance. */
export function routeIdle(policy: GlobalPolicy, tokens: Tokens, now = 0): InstanceId {
  const r = req(tokens, undefined, now);
  const d = policy.route(r, now);
  policy.requestFinished(r.id, now, { promptTokens: tokens.length, cachedTokens: 0, outputTokens: 1 });
  return d.instance;
}

/** A polled load signal: an idle instance unless told otherwise. */
export function signal(fields: Partial<InstanceLoadSignal> = {}): InstanceLoadSignal {
  return {
    running: 0,
    waiting: 0,
    queuedPrefillTokens: 0,
    usedKvTokens: 0,
    freeKvTokens: 1_000_000,
    ...fields,
  };
}
