/** What a fleet holds and costs, for per-GPU goodput and cost per request. */
import { GPU_ECONOMICS, type GpuName } from '../cost-model/gpu-shapes.ts';
import type { FleetInstance } from './fleet.ts';

/** GPUs over all instances (tensorParallel x pipelineParallel each). */
export function fleetGpuCount(instances: readonly Pick<FleetInstance, 'gpus'>[]): number {
  return instances.reduce((sum, inst) => sum + inst.gpus, 0);
}

/** US dollars per hour over all instances; undefined when any instance has no price. */
export function fleetCostPerHour(
  instances: readonly Pick<FleetInstance, 'pricePerHour'>[],
): number | undefined {
  let sum = 0;
  for (const inst of instances) {
    if (inst.pricePerHour === undefined) return undefined;
    sum += inst.pricePerHour;
  }
  return sum;
}

/** Board power (TDP) over all GPUs, watts; undefined when a GPU has no listed power. */
export function fleetPowerWatts(
  instances: readonly Pick<FleetInstance, 'gpu' | 'gpus'>[],
): number | undefined {
  let sum = 0;
  for (const inst of instances) {
    const watts = GPU_ECONOMICS[inst.gpu as GpuName]?.powerWatts;
    if (watts === undefined) return undefined;
    sum += watts * inst.gpus;
  }
  return sum;
}

/** Requests per second per GPU (DistServe's per-GPU goodput, given a goodput). */
export function perGpu(rate: number, instances: readonly Pick<FleetInstance, 'gpus'>[]): number {
  return rate / fleetGpuCount(instances);
}
