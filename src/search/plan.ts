/**
 * What `preble plan` answers, shared by its three questions (vidur.ts, distserve.ts, splitwise.ts):
 * the best fleet and the runner-up, the best per objective, the Pareto front of capacity against cost,
 * and every configuration evaluated.
 */
import type { CapacityCriterion } from './capacity.ts';
import type { ObjectiveName } from './economics.ts';
import {
  capacityCostFront,
  type Evaluated,
  type Recommendation,
  ranked,
  recommendation,
} from './evaluated.ts';
import { cheapestForRate } from './for-rate.ts';

export const questionNames = ['vidur', 'distserve', 'splitwise', 'aladdin'] as const;
export type QuestionName = (typeof questionNames)[number];

export interface ParetoPoint {
  readonly label: string;
  readonly capacity: number;
  readonly gpus: number;
  readonly costPerHour?: number;
}

export interface PlanResult {
  readonly question: QuestionName;
  /** The capacity criterion, in words. */
  readonly criterion: string;
  /** What `best` maximizes without a target rate. */
  readonly objective: ObjectiveName;
  /** The target rate, when given (`best` is then the cheapest fleet confirmed to meet it). */
  readonly rate?: number;
  /** Configurations (capacity searches) evaluated. */
  readonly configurations: number;
  /** Of those, answered from the cache. */
  readonly cached: number;
  /** Points of the space left out (model too large for the GPUs, over --max-gpus). */
  readonly skipped: number;
  readonly best?: Recommendation;
  readonly runnerUp?: Recommendation;
  /** Without a target rate: the best configuration for each objective that has figures. */
  readonly bestBy: Partial<Record<ObjectiveName, Recommendation>>;
  readonly pareto: readonly ParetoPoint[];
  /** Every configuration evaluated, in the space's order. */
  readonly evaluated: readonly Evaluated[];
  /** A question's own findings (DistServe's phases, Splitwise's grid), for the report and --json. */
  readonly details?: Readonly<Record<string, unknown>>;
}

export interface Choice {
  readonly best?: Recommendation;
  readonly runnerUp?: Recommendation;
  readonly bestBy: Partial<Record<ObjectiveName, Recommendation>>;
}

/**
 * Without `rate`: the two best configurations by `objective` and the best by every objective; with
 * it: the two cheapest fleets the simulator confirms meet it.
 */
export function choose(
  items: readonly Evaluated[],
  objective: ObjectiveName,
  options: { readonly rate?: number; readonly criterion: CapacityCriterion; readonly maxGpus?: number },
): Choice {
  if (options.rate !== undefined) {
    const [best, runnerUp] = cheapestForRate(items, {
      rate: options.rate,
      criterion: options.criterion,
      ...(options.maxGpus === undefined ? {} : { maxGpus: options.maxGpus }),
    });
    return {
      ...(best === undefined ? {} : { best }),
      ...(runnerUp === undefined ? {} : { runnerUp }),
      bestBy: {},
    };
  }
  const [best, runnerUp] = ranked(items, objective);
  const bestBy: Partial<Record<ObjectiveName, Recommendation>> = {};
  for (const name of ['perDollar', 'perGpu', 'perKilowatt'] as const) {
    const top = ranked(items, name)[0];
    if (top !== undefined) bestBy[name] = recommendation(top);
  }
  return {
    ...(best === undefined ? {} : { best: recommendation(best) }),
    ...(runnerUp === undefined ? {} : { runnerUp: recommendation(runnerUp) }),
    bestBy,
  };
}

export function paretoPoints(items: readonly Evaluated[]): ParetoPoint[] {
  return capacityCostFront(items)
    .map((e) => ({
      label: e.label,
      capacity: e.capacity,
      gpus: e.economics.gpus,
      ...(e.economics.costPerHour === undefined ? {} : { costPerHour: e.economics.costPerHour }),
    }))
    .sort((a, b) => (a.costPerHour ?? a.gpus) - (b.costPerHour ?? b.gpus));
}
