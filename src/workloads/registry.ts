import { type BaseWorkloadOptions, baseWorkloads } from './base-workloads.ts';
import { type MixedOptions, mixed } from './mixed.ts';
import type { WorkloadOptions, WorkloadRequest } from './types.ts';

export const workloadNames = [
  'toolbench',
  'embodied-agent',
  'programming',
  'video-qa',
  'loogle',
  'mixed',
] as const;
export type WorkloadName = (typeof workloadNames)[number];

/** Options any workload accepts: the common ones plus each generator's own (ignored by the others). */
export type AnyWorkloadOptions = WorkloadOptions &
  Partial<Omit<BaseWorkloadOptions, keyof WorkloadOptions>> &
  Partial<Omit<MixedOptions, keyof WorkloadOptions>>;

export function isWorkloadName(name: string): name is WorkloadName {
  return (workloadNames as readonly string[]).includes(name);
}

/** The named workload's request stream; throws listing the valid names for an unknown one. */
export function createWorkload(name: string, options: AnyWorkloadOptions): Iterable<WorkloadRequest> {
  if (!isWorkloadName(name)) {
    throw new Error(`unknown workload '${name}'; valid workloads: ${workloadNames.join(', ')}`);
  }
  return name === 'mixed' ? mixed(options) : baseWorkloads[name](options);
}
