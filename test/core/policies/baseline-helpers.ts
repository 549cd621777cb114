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
