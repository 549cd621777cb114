/**
 * Vidur-Search's question: which configuration (GPU, TP, PP, batch and chunk sizes, queue and global
 * policy, layout) serves the workload best per dollar, or most cheaply at a target rate. Each point of
 * the space is one unit (its layout); its capacity is searched by simulation.
 */

import type { CapacityCache } from './cache.ts';
import { describeCriterion } from './capacity.ts';
import { evaluated, rankingObjective } from './evaluated.ts';
import { choose, type PlanResult, paretoPoints } from './plan.ts';
import { type Evaluation, evaluateTasks, evaluateTasksHere } from './pool.ts';
import { type PlanRequest, type PlanRun, taskOf } from './request.ts';
import type { ScenarioSpec } from './scenario.ts';
import { configurationLabel, configurationScenario, type EnumeratedSpace, enumerateSpace } from './space.ts';
import type { CapacityTask } from './task.ts';

export async function planVidur(request: PlanRequest, run: PlanRun): Promise<PlanResult> {
  const space = vidurSpace(request);
  return vidurResult(request, space, await evaluateTasks(space.tasks, run));
}

/** The same on this thread, synchronously (experiments). */
export function planVidurHere(request: PlanRequest, cache: CapacityCache): PlanResult {
  const space = vidurSpace(request);
  return vidurResult(request, space, evaluateTasksHere(space.tasks, cache));
}

interface VidurSpace extends EnumeratedSpace {
  readonly scenarios: readonly ScenarioSpec[];
  readonly tasks: readonly CapacityTask[];
}

function vidurSpace(request: PlanRequest): VidurSpace {
  const space = enumerateSpace(request.space);
  if (space.configurations.length === 0)
    throw new Error(`no configuration of the space fits: ${space.reasons.slice(0, 3).join('; ')}`);
  const scenarios = space.configurations.map((c) => configurationScenario(request.base, request.space, c));
  return { ...space, scenarios, tasks: scenarios.map((s) => taskOf(request, s)) };
}

function vidurResult(request: PlanRequest, space: VidurSpace, evaluation: Evaluation): PlanResult {
  const { configurations, scenarios, skipped } = space;
  const items = configurations.map((c, i) =>
    evaluated(configurationLabel(c), c, scenarios[i]!, evaluation.capacities[i]!),
  );
  const objective = rankingObjective(items, request.objective);
  return {
    question: 'vidur',
    criterion: describeCriterion(request.criterion),
    objective,
    ...(request.rate === undefined ? {} : { rate: request.rate }),
    configurations: configurations.length,
    cached: evaluation.cached,
    skipped,
    ...choose(items, objective, {
      criterion: request.criterion,
      ...(request.rate === undefined ? {} : { rate: request.rate }),
      ...(request.space.maxGpus === undefined ? {} : { maxGpus: request.space.maxGpus }),
    }),
    pareto: paretoPoints(items),
    evaluated: items,
  };
}
