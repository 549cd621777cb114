import type { InstanceId } from '../../types.ts';

/**
 * Index in `active` (ascending ids) of the first id greater than `id`, wrapping to 0. Rotations
 * keyed by the last chosen id, not by a position, stay fair when instances join or leave.
 */
export function indexAfter(active: readonly InstanceId[], id: InstanceId): number {
  let lo = 0;
  let hi = active.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (active[mid]! <= id) lo = mid + 1;
    else hi = mid;
  }
  return lo === active.length ? 0 : lo;
}
