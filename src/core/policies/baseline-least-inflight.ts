import type { ClusterView } from '../cluster-view.ts';
import type { InstanceId } from '../types.ts';

/**
 * The active instance with the fewest in-flight requests. The scan starts at index `start` and
 * wraps, so among equals the first one from `start` wins: start 0 gives the lowest id, a start
 * that moves after each choice rotates ties instead of piling them on one instance.
 */
export function leastInflight(view: ClusterView, active: readonly InstanceId[], start = 0): InstanceId {
  const n = active.length;
  let best = active[start]!;
  let bestLoad = view.inflight(best);
  for (let k = 1; k < n && bestLoad > 0; k++) {
    const id = active[(start + k) % n]!;
    const load = view.inflight(id);
    if (load < bestLoad) {
      best = id;
      bestLoad = load;
    }
  }
  return best;
}
