import type { WorkloadRequest } from '../types.ts';
import { reiterable } from './window.ts';

/**
 * The stream with its arrival times replaced, in order, by `arrivals` (e.g. a trace's bursty
 * pattern on a Preble workload's prompts). Stops when either runs out. Lazy; re-iterable when the
 * stream is.
 */
export function withArrivals(
  stream: Iterable<WorkloadRequest>,
  arrivals: readonly number[],
): Iterable<WorkloadRequest> {
  return reiterable(function* () {
    let index = 0;
    for (const request of stream) {
      if (index >= arrivals.length) return;
      yield { ...request, arrival: arrivals[index++]! };
    }
  });
}
