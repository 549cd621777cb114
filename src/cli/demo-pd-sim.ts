import { costModelPreset } from '../core/cost-model/presets.ts';
import { buildFleet, parseFleetShorthand } from '../core/fleet/index.ts';
import type { LinkClass } from '../core/fleet/kv-link.ts';
import type { DemoConfiguration } from '../demo/demo.ts';
import { defaultChunkedPrefillTokens } from '../engine/options.ts';
import { fleetRun, runSimulation, type SimReport } from '../sim/run.ts';
import type { WorkloadRequest } from '../workloads/types.ts';

export interface PdSimInput {
  readonly workload: string;
  readonly rps: number;
  readonly requests: readonly WorkloadRequest[];
  /** The replicas' cost-model preset. */
  readonly model: string;
  readonly seed: number;
  /** Replicas' KV capacity when not the preset's (llama.cpp: what its slots hold). */
  readonly kvCapacityTokens?: number | undefined;
  /** Requests a replica runs at once (llama.cpp: its slots). */
  readonly maxRunning?: number;
  /** A busy prefix is not shared (llama.cpp slots). */
  readonly exclusivePrefixes?: boolean;
  /** Every link's class; default `emulated`, what the emulated decode engines' `--kv-link` defaults to. */
  readonly link?: LinkClass;
}

/**
 * What `preble sim` predicts for a configuration on the same stream: the same fleet (`--fleet`
 * shorthand), every link of one class (default `emulated`: 25 GB/s, serialized, as the emulated decode
 * engines wait the whole transfer before adopting), the engines' own chunk budget (they have no
 * DistServe L_m batching) and the queue policy the demo starts them with.
 */
export function pdSimulation(configuration: DemoConfiguration, input: PdSimInput): SimReport {
  const link = input.link ?? 'emulated';
  const fleet = buildFleet({
    ...parseFleetShorthand(configuration.fleet, input.model),
    network: link,
    nodeLink: link,
  });
  return runSimulation({
    policy: configuration.policy,
    workload: input.workload,
    rps: input.rps,
    costModel: costModelPreset(
      input.model,
      input.kvCapacityTokens === undefined ? {} : { kvCapacityTokens: input.kvCapacityTokens },
    ),
    requests: () => input.requests,
    seed: input.seed,
    queuePolicy: 'auto',
    chunkTokens: defaultChunkedPrefillTokens,
    ...(input.maxRunning === undefined ? {} : { maxRunning: input.maxRunning }),
    ...(input.exclusivePrefixes === true ? { exclusivePrefixes: true } : {}),
    ...fleetRun(fleet, input.kvCapacityTokens),
  }).report;
}
