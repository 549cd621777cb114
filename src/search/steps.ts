/**
 * A search in rounds (DistServe's decode round needs the prefill round's answers) written once as a
 * generator of task batches, run either on the pool (`preble plan`) or on this thread (experiments,
 * whose report functions are synchronous).
 */
import type { CapacityCache } from './cache.ts';
import type { PlanResult } from './plan.ts';
import { type EvaluateOptions, type Evaluation, evaluateTasks, evaluateTasksHere } from './pool.ts';
import type { CapacityTask } from './task.ts';

export type SearchSteps = Generator<readonly CapacityTask[], PlanResult, Evaluation>;

export async function runSteps(steps: SearchSteps, run: EvaluateOptions): Promise<PlanResult> {
  let next = steps.next(undefined as unknown as Evaluation);
  while (next.done !== true) next = steps.next(await evaluateTasks(next.value, run));
  return next.value;
}

export function runStepsHere(steps: SearchSteps, cache: CapacityCache): PlanResult {
  let next = steps.next(undefined as unknown as Evaluation);
  while (next.done !== true) next = steps.next(evaluateTasksHere(next.value, cache));
  return next.value;
}
