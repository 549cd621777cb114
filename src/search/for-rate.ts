/**
 * The cheapest fleets meeting a target rate: each configuration's layout repeated ceil(rate / capacity)
 * times (capacity adds up over independent units, Vidur's and DistServe's assumption), cheapest first,
 * each candidate then simulated at the rate as a whole fleet and grown by a unit while it misses.
 */
import type { CapacityCriterion } from './capacity.ts';
import { scenarioEconomics } from './economics.ts';
import { costOf, type Evaluated, type Recommendation, recommendation, verify } from './evaluated.ts';
import type { ScenarioSpec } from './scenario.ts';

/** `scenario` with every instance spec's count times `units`. */
export function scaledScenario(scenario: ScenarioSpec, units: number): ScenarioSpec {
  return {
    ...scenario,
    fleet: {
      instances: scenario.fleet.instances.map((spec) => ({ ...spec, count: (spec.count ?? 1) * units })),
    },
  };
}

export interface ForRateOptions {
  readonly rate: number;
  readonly criterion: CapacityCriterion;
  readonly maxGpus?: number;
  /** How many passing fleets to return (best and runner-up: 2). */
  readonly wanted?: number;
  /** Extra units tried on a candidate that misses the rate before moving to the next (default 2). */
  readonly extraUnits?: number;
}

/** The `wanted` cheapest fleets that the simulator confirms meet the rate, cheapest first. */
export function cheapestForRate(items: readonly Evaluated[], options: ForRateOptions): Recommendation[] {
  const { rate, wanted = 2, extraUnits = 2 } = options;
  const candidates = items
    .filter((e) => e.capacity > 0)
    .map((e, i) => {
      const units = Math.ceil(rate / e.capacity - 1e-9);
      return { e, i, units, cost: costOf(scenarioEconomics(scaledScenario(e.scenario, units))) };
    })
    .filter(({ e, units }) => options.maxGpus === undefined || e.economics.gpus * units <= options.maxGpus)
    .sort((a, b) => a.cost - b.cost || a.i - b.i);
  const found: Recommendation[] = [];
  for (const { e, units } of candidates) {
    if (found.length >= wanted) break;
    for (let u = units; u <= units + extraUnits; u++) {
      if (options.maxGpus !== undefined && e.economics.gpus * u > options.maxGpus) break;
      const scenario = scaledScenario(e.scenario, u);
      const check = verify(scenario, rate, options.criterion);
      if (check.passed) {
        found.push(recommendation(e, scenario, Math.max(rate, e.capacity * u), check));
        break;
      }
    }
  }
  return found;
}
