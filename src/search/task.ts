/** One unit of search work, as plain JSON: a scenario's capacity under a criterion. */
import { type Capacity, type CapacityCriterion, scenarioCapacity } from './capacity.ts';
import type { ScenarioSpec } from './scenario.ts';

export interface CapacityTask {
  readonly scenario: ScenarioSpec;
  readonly criterion: CapacityCriterion;
  /** The first rate tried (default `DEFAULT_LOW_RPS`). */
  readonly low?: number;
  /** Bisection stops when the bracket is this share of its upper end (default 0.02). */
  readonly relativeTolerance?: number;
  /** Doublings before the search gives up bracketing (capacity then a lower bound; default 20). */
  readonly maxDoublings?: number;
}

/**
 * A scenario whose memory cannot hold some request (longer than the KV memory left beside the weights)
 * has capacity 0: that configuration cannot serve the workload. The simulator refuses such a request at
 * arrival (`scenarioCapacity` answers 0); an engine still throws where a decode instance picked when
 * the KV is ready is too small for it (a fleet of mixed sizes).
 */
export function runCapacityTask(task: CapacityTask): Capacity {
  try {
    return capacityOf(task);
  } catch (error) {
    if (error instanceof Error && /needs \d+ KV tokens/.test(error.message))
      return { rps: 0, bracketed: true, probes: [] };
    throw error;
  }
}

function capacityOf(task: CapacityTask): Capacity {
  return scenarioCapacity(task.scenario, {
    criterion: task.criterion,
    ...(task.low === undefined ? {} : { low: task.low }),
    ...(task.relativeTolerance === undefined ? {} : { relativeTolerance: task.relativeTolerance }),
    ...(task.maxDoublings === undefined ? {} : { maxDoublings: task.maxDoublings }),
  });
}
