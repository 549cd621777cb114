import { costModelPreset } from '../core/cost-model/presets.ts';
import { buildFleet, parseFleetShorthand } from '../core/fleet/index.ts';
import type { DemoConfiguration } from '../demo/demo.ts';
import { defaultChunkedPrefillTokens } from '../engine/options.ts';
import { fleetRun, runSimulation, type SimReport } from '../sim/run.ts';
import type { WorkloadRequest } from '../workloads/types.ts';

export interface PdSimInput {
  readonly workload: string;
  readonly rps: number;
  readonly requests: readonly WorkloadRequest[];
  /** The emulated replicas' cost-model preset. */
  readonly model: string;
  readonly seed: number;
}

/**
 * What `preble sim` predicts for a configuration on the same stream: the same fleet (`--fleet`
 * shorthand), every link the `emulated` class the decode engines' `--kv-link` defaults to (25 GB/s,
 * serialized: the engine waits the whole transfer before adopting), the engines' own chunk budget
 * (they have no DistServe L_m batching) and the queue policy the demo starts them with.
 */
export function pdSimulation(configuration: DemoConfiguration, input: PdSimInput): SimReport {
  const fleet = buildFleet({
    ...parseFleetShorthand(configuration.fleet, input.model),
    network: 'emulated',
    nodeLink: 'emulated',
  });
  return runSimulation({
    policy: configuration.policy,
    workload: input.workload,
    rps: input.rps,
    costModel: costModelPreset(input.model),
    requests: () => input.requests,
    seed: input.seed,
    queuePolicy: 'auto',
    chunkTokens: defaultChunkedPrefillTokens,
    ...fleetRun(fleet),
  }).report;
}
