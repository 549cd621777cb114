/**
 * A scenario: everything one simulated run needs but the arrival rate, as plain JSON (so that worker
 * threads can take it and a hash of it can key the cache). `scenarioSimSpec` turns it into the
 * `SimSpec` that `preble sim` runs, so a plan replays in `preble sim` unchanged.
 */

import { costModelPreset } from '../core/cost-model/presets.ts';
import { buildFleet, type Fleet } from '../core/fleet/fleet.ts';
import { type InstanceSpecInput, parseFleetConfig } from '../core/fleet/spec.ts';
import { fleetRun, type SimSpec } from '../sim/run.ts';
import { workloadStream } from '../workloads/request-stream.ts';

export interface ScenarioSpec {
  /** As `preble sim --workload`: a generator (`sharegpt-like`, `toolbench:tools=8`), `synthetic:...` or a trace. */
  readonly workload: string;
  /** Requests per run, at least (see `requestsAt`). */
  readonly requests: number;
  /**
   * Runs at a rate r carry at least r × this many seconds of arrivals (default `MIN_ARRIVAL_SECONDS`),
   * up to `maxRequests`: a fixed count arriving within a second or two would pass any queueing
   * criterion at any rate, its queue never having time to grow.
   */
  readonly minSeconds?: number;
  /** The most requests a run carries (default `MAX_REQUESTS`). */
  readonly maxRequests?: number;
  readonly seed: number;
  /** Targets in seconds. */
  readonly slo: { readonly ttft: number; readonly tpot: number };
  /** The global policy (`e2`, `round-robin`, `distserve` for prefill and decode instances, ...). */
  readonly policy: string;
  /** The fleet as a fleet file writes it (docs/fleets.md): instance specs with model, GPU, TP, PP, role, count. */
  readonly fleet: { readonly instances: readonly InstanceSpecInput[] };
}

export const MIN_ARRIVAL_SECONDS = 10;
export const MAX_REQUESTS = 4000;

/** Requests in a run of `scenario` at `rps`: `requests`, or `minSeconds` of arrivals, at most `maxRequests`. */
export function requestsAt(scenario: ScenarioSpec, rps: number): number {
  const wanted = Math.ceil(rps * (scenario.minSeconds ?? MIN_ARRIVAL_SECONDS));
  return Math.max(scenario.requests, Math.min(scenario.maxRequests ?? MAX_REQUESTS, wanted));
}

/** The scenario's fleet, built (throws FleetSpecError naming a bad field). */
export function scenarioFleet(scenario: ScenarioSpec): Fleet {
  return buildFleet(parseFleetConfig(scenario.fleet));
}

/** The simulation of `scenario` at `rps` requests per second. */
export function scenarioSimSpec(scenario: ScenarioSpec, rps: number): SimSpec {
  const fleet = scenarioFleet(scenario);
  return {
    policy: scenario.policy,
    workload: scenario.workload,
    ...fleetRun(fleet),
    rps,
    // The policy's own cost model (E2's estimates): the first instance's.
    costModel: costModelPreset(fleet.instances[0]!.costModel),
    requests: workloadStream(scenario.workload, {
      requests: requestsAt(scenario, rps),
      rps,
      seed: scenario.seed,
      instances: fleet.instances.length,
    }),
    seed: scenario.seed,
    slo: scenario.slo,
  };
}
