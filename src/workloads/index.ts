export { PoissonArrivals } from './arrivals.ts';
export { type BaseWorkloadName, baseWorkloadNames } from './base-workloads.ts';
export { type ConversationOptions, conversation } from './conversation.ts';
export { type EmbodiedAgentOptions, embodiedAgent } from './embodied-agent.ts';
export { type LoogleOptions, loogle } from './loogle.ts';
export { type MixedComponent, type MixedOptions, mixed } from './mixed.ts';
export { type ProgrammingOptions, programming } from './programming.ts';
export {
  type AnyWorkloadOptions,
  createWorkload,
  isWorkloadName,
  type WorkloadName,
  workloadNames,
} from './registry.ts';
export {
  analyzePrefixSharing,
  type MeanStd,
  meanStd,
  measureWorkload,
  type PrefixSharing,
  type WorkloadStats,
} from './stats.ts';
export { concatTokens, randomTokens, VOCABULARY_SIZE } from './tokens.ts';
export { type ToolbenchOptions, toolbench } from './toolbench.ts';
export type { WorkloadGenerator, WorkloadOptions, WorkloadRequest } from './types.ts';
export { type VideoQaOptions, videoQa } from './video-qa.ts';
