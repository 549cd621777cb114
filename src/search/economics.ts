/** What a configuration costs and what its capacity is worth per dollar, per GPU and per kilowatt. */
import { fleetCostPerHour, fleetGpuCount, fleetPowerWatts } from '../core/fleet/cost.ts';
import type { ScenarioSpec } from './scenario.ts';
import { scenarioFleet } from './scenario.ts';

export interface Economics {
  readonly gpus: number;
  /** US dollars per hour; absent when a GPU has no price (give one with `--price GPU=USD`). */
  readonly costPerHour?: number;
  /** Board power of all GPUs, watts; absent when a GPU has no listed power. */
  readonly watts?: number;
}

/** Requests per second per unit of each resource (absent where the resource has no figure). */
export interface Objectives {
  readonly perGpu: number;
  /** Requests per second per dollar-hour (Vidur's QPS per dollar). */
  readonly perDollar?: number;
  readonly perKilowatt?: number;
}

export const objectiveNames = ['perDollar', 'perGpu', 'perKilowatt'] as const;
export type ObjectiveName = (typeof objectiveNames)[number];

export function scenarioEconomics(scenario: ScenarioSpec): Economics {
  const { instances } = scenarioFleet(scenario);
  const costPerHour = fleetCostPerHour(instances);
  const watts = fleetPowerWatts(instances);
  return {
    gpus: fleetGpuCount(instances),
    ...(costPerHour === undefined ? {} : { costPerHour }),
    ...(watts === undefined ? {} : { watts }),
  };
}

export function objectivesOf(rps: number, e: Economics): Objectives {
  return {
    perGpu: rps / e.gpus,
    ...(e.costPerHour === undefined || e.costPerHour === 0 ? {} : { perDollar: rps / e.costPerHour }),
    ...(e.watts === undefined ? {} : { perKilowatt: rps / (e.watts / 1000) }),
  };
}
