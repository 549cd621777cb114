/**
 * Vidur-Search's question: which configuration (GPU, TP, PP, batch and chunk sizes, queue and global
 * policy, layout) serves the workload best per dollar, or most cheaply at a target rate. Each point of
 * the space is one unit (its layout); its capacity is searched by simulation.
 */

import { describeCriterion } from './capacity.ts';
import { evaluated, rankingObjective } from './evaluated.ts';
import { choose, type PlanResult, paretoPoints } from './plan.ts';
import { evaluateTasks } from './pool.ts';
import { type PlanRequest, type PlanRun, taskOf } from './request.ts';
import { configurationLabel, configurationScenario, enumerateSpace } from './space.ts';

export async function planVidur(request: PlanRequest, run: PlanRun): Promise<PlanResult> {
  const { configurations, skipped, reasons } = enumerateSpace(request.space);
  if (configurations.length === 0)
    throw new Error(`no configuration of the space fits: ${reasons.slice(0, 3).join('; ')}`);
  const scenarios = configurations.map((c) => configurationScenario(request.base, request.space, c));
  const { capacities, cached } = await evaluateTasks(
    scenarios.map((s) => taskOf(request, s)),
    run,
  );
  const items = configurations.map((c, i) =>
    evaluated(configurationLabel(c), c, scenarios[i]!, capacities[i]!),
  );
  const objective = rankingObjective(items, request.objective);
  return {
    question: 'vidur',
    criterion: describeCriterion(request.criterion),
    objective,
    ...(request.rate === undefined ? {} : { rate: request.rate }),
    configurations: configurations.length,
    cached,
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
