/** A configuration with its simulated capacity, what it costs, and a fleet of it recommended for a rate. */
import type { InstanceSpecInput } from '../core/fleet/spec.ts';
import { runSimulation } from '../sim/run.ts';
import { type Capacity, type CapacityCriterion, meetsCriterion, p99SchedulingDelay } from './capacity.ts';
import {
  type Economics,
  type ObjectiveName,
  type Objectives,
  objectivesOf,
  scenarioEconomics,
} from './economics.ts';
import { paretoFront } from './pareto.ts';
import { type ScenarioSpec, scenarioSimSpec } from './scenario.ts';

export interface Evaluated {
  readonly label: string;
  /** The configuration's own fields (a space point, or a question's per-phase description). */
  readonly configuration: object;
  /** The scenario the capacity is of. */
  readonly scenario: ScenarioSpec;
  /** Requests per second it sustains under the criterion; 0 when not even the lowest rate passed. */
  readonly capacity: number;
  /** False when the search never found a failing rate (capacity is then a lower bound). */
  readonly bracketed: boolean;
  readonly probes: number;
  readonly economics: Economics;
  readonly objectives: Objectives;
}

export function evaluated(
  label: string,
  configuration: object,
  scenario: ScenarioSpec,
  capacity: Capacity,
  /** What the capacity costs, where that is not the whole scenario (DistServe's phase runs have helpers). */
  costed: ScenarioSpec = scenario,
): Evaluated {
  const economics = scenarioEconomics(costed);
  return {
    label,
    configuration,
    scenario,
    capacity: capacity.rps,
    bracketed: capacity.bracketed,
    probes: capacity.probes.length,
    economics,
    objectives: objectivesOf(capacity.rps, economics),
  };
}

/** The objective to rank by: the one asked for, else per dollar where every point has a price, else per GPU. */
export function rankingObjective(items: readonly Evaluated[], asked?: ObjectiveName): ObjectiveName {
  if (asked !== undefined) return asked;
  return items.length > 0 && items.every((e) => e.objectives.perDollar !== undefined)
    ? 'perDollar'
    : 'perGpu';
}

/** Items with a positive capacity, best first by `objective` (ties: the cheaper, then input order). */
export function ranked(items: readonly Evaluated[], objective: ObjectiveName): Evaluated[] {
  return items
    .filter((e) => e.capacity > 0 && e.objectives[objective] !== undefined)
    .map((e, i) => ({ e, i }))
    .sort(
      (a, b) =>
        b.e.objectives[objective]! - a.e.objectives[objective]! ||
        costOf(a.e.economics) - costOf(b.e.economics) ||
        a.i - b.i,
    )
    .map(({ e }) => e);
}

/** Dollars per hour where known, else GPUs: what "cheaper" means. */
export function costOf(e: Economics): number {
  return e.costPerHour ?? e.gpus;
}

/** The configurations no other beats on both capacity and cost (dollars per hour, else GPUs). */
export function capacityCostFront(items: readonly Evaluated[]): Evaluated[] {
  return paretoFront(
    items.filter((e) => e.capacity > 0),
    (e) => [e.capacity, -costOf(e.economics)],
  );
}

/** A run of a recommended fleet at the rate it was planned for. */
export interface Verification {
  readonly rps: number;
  readonly passed: boolean;
  /** Shares meeting each SLO and both. */
  readonly attainment: { readonly ttft: number; readonly tpot: number; readonly both: number };
  readonly p99SchedulingDelay: number;
}

/** Simulate `scenario` at `rps` (the `preble sim` path) and check it against the criterion. */
export function verify(scenario: ScenarioSpec, rps: number, criterion: CapacityCriterion): Verification {
  const { report, result } = runSimulation(scenarioSimSpec(scenario, rps));
  return {
    rps,
    passed: meetsCriterion(criterion, report, result.records),
    attainment: report.sloAttainment ?? { ttft: 0, tpot: 0, both: 0 },
    p99SchedulingDelay: p99SchedulingDelay(result.records),
  };
}

/** A fleet the planner recommends: its instances (a fleet file's), capacity, cost, and its check. */
export interface Recommendation {
  readonly label: string;
  readonly configuration: object;
  /** The policy and instances, as `preble sim --policy P --fleet FILE` takes them. */
  readonly policy: string;
  readonly instances: readonly InstanceSpecInput[];
  /** Requests per second it sustains (for a target rate: at least the target, as checked). */
  readonly capacity: number;
  readonly economics: Economics;
  readonly objectives: Objectives;
  /** With a target rate: the fleet simulated at it. */
  readonly verification?: Verification;
}

export function recommendation(
  item: Evaluated,
  scenario: ScenarioSpec = item.scenario,
  capacity = item.capacity,
  verification?: Verification,
): Recommendation {
  const economics = scenarioEconomics(scenario);
  return {
    label: item.label,
    configuration: item.configuration,
    policy: scenario.policy,
    instances: scenario.fleet.instances,
    capacity,
    economics,
    objectives: objectivesOf(capacity, economics),
    ...(verification === undefined ? {} : { verification }),
  };
}
