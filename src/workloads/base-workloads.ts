import { type EmbodiedAgentOptions, embodiedAgent } from './embodied-agent.ts';
import { type LoogleOptions, loogle } from './loogle.ts';
import { type ProgrammingOptions, programming } from './programming.ts';
import { type ToolbenchOptions, toolbench } from './toolbench.ts';
import type { WorkloadGenerator } from './types.ts';
import { type VideoQaOptions, videoQa } from './video-qa.ts';

/** The five synthetic workloads of the paper's Table 1, by name. */
export const baseWorkloadNames = [
  'toolbench',
  'embodied-agent',
  'programming',
  'video-qa',
  'loogle',
] as const;
export type BaseWorkloadName = (typeof baseWorkloadNames)[number];

/** Every option of every base workload (no two of them use one name for different things). */
export type BaseWorkloadOptions = ToolbenchOptions &
  EmbodiedAgentOptions &
  ProgrammingOptions &
  VideoQaOptions &
  LoogleOptions;

export const baseWorkloads: Record<BaseWorkloadName, WorkloadGenerator<BaseWorkloadOptions>> = {
  toolbench,
  'embodied-agent': embodiedAgent,
  programming,
  'video-qa': videoQa,
  loogle,
};
