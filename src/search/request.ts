/** What every question of `preble plan` is asked with, and how its searches run. */
import type { CapacityCriterion } from './capacity.ts';
import type { ObjectiveName } from './economics.ts';
import type { EvaluateOptions } from './pool.ts';
import type { ScenarioBase, SearchSpace } from './space.ts';
import type { CapacityTask } from './task.ts';

export interface PlanRequest {
  /** Workload, requests per run, seed, SLOs. */
  readonly base: ScenarioBase;
  readonly criterion: CapacityCriterion;
  readonly space: SearchSpace;
  /** A target rate: the cheapest fleet meeting it; without: the best configuration by `objective`. */
  readonly rate?: number;
  readonly objective?: ObjectiveName;
  /** Capacity search: first rate and relative tolerance (task.ts). */
  readonly low?: number;
  readonly relativeTolerance?: number;
}

/** A capacity task for one scenario of the request. */
export function taskOf(
  request: PlanRequest,
  scenario: CapacityTask['scenario'],
  criterion = request.criterion,
): CapacityTask {
  return {
    scenario,
    criterion,
    ...(request.low === undefined ? {} : { low: request.low }),
    ...(request.relativeTolerance === undefined ? {} : { relativeTolerance: request.relativeTolerance }),
  };
}

export type PlanRun = EvaluateOptions;
