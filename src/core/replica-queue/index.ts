export { cachedPromptTokens, prefillTokens, uncachedTokens } from './admission.ts';
export { createFcfsPolicy } from './fcfs.ts';
export { createLarryPolicy, defaultLarryAlpha, type LarryOptions, larryScore } from './larry.ts';
export { createLpmPolicy } from './lpm.ts';
export { createLtrPolicy, type LtrOptions, ltrDefaults } from './ltr.ts';
export { createNoPreemptPolicy, defaultMaxOutputTokens, type NoPreemptOptions } from './no-preempt.ts';
export { createPiaPolicy, type PiaOptions, piaDefaults } from './pia.ts';
export { predictedRemaining } from './predicted.ts';
export { createPriorityGroupsPolicy, type PriorityGroupsOptions } from './priority-groups.ts';
export { defaultPriorityGroups, nextGroupInMix, priorityGroup, proportionalSplit } from './priority-split.ts';
export {
  createQueuePolicy,
  describeQueuePolicies,
  isQueuePolicyName,
  type QueuePolicyName,
  type QueuePolicyOptions,
  queuePolicyNames,
} from './registry.ts';
export { createS3Policy } from './s3.ts';
export {
  createSplitwiseMixedPolicy,
  type SplitwiseMixedOptions,
  splitwiseMixedDefaults,
} from './splitwise-mixed.ts';
export { createTrailPolicy, type TrailOptions, trailDefaults } from './trail.ts';
export type {
  PreemptionPlan,
  QueueContext,
  QueuedRequest,
  QueuePolicy,
  RunningRequest,
} from './types.ts';
