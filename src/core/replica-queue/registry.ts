import { describeWithDefaults, optionFromText, splitDottedOption, withDefaults } from '../with-defaults.ts';
import { createFastServePolicy, type FastServeOptions, fastServeDefaults } from './fastserve.ts';
import { createFcfsPolicy } from './fcfs.ts';
import { createLarryPolicy, type LarryOptions, larryDefaults } from './larry.ts';
import { createLpmPolicy, type LpmOptions, lpmDefaults } from './lpm.ts';
import { createLtrPolicy, type LtrOptions, ltrDefaults } from './ltr.ts';
import { createNoPreemptPolicy, type NoPreemptOptions, noPreemptDefaults } from './no-preempt.ts';
import { createPiaPolicy, type PiaOptions, piaDefaults } from './pia.ts';
import {
  createPriorityGroupsPolicy,
  type PriorityGroupsOptions,
  priorityGroupsDefaults,
} from './priority-groups.ts';
import { createS3Policy } from './s3.ts';
import {
  createSplitwiseMixedPolicy,
  type SplitwiseMixedOptions,
  splitwiseMixedDefaults,
} from './splitwise-mixed.ts';
import {
  createTetriInferQueuePolicy,
  type TetriInferQueueOptions,
  tetriInferQueueDefaults,
} from './tetriinfer.ts';
import { createTrailPolicy, type TrailOptions, trailDefaults } from './trail.ts';
import type { QueuePolicy } from './types.ts';

/** Options of every queue policy in one object; each policy reads only its own. */
export type QueuePolicyOptions = LpmOptions &
  PriorityGroupsOptions &
  LarryOptions &
  NoPreemptOptions &
  SplitwiseMixedOptions &
  TrailOptions &
  LtrOptions &
  PiaOptions &
  FastServeOptions &
  TetriInferQueueOptions;

interface QueuePolicyEntry<O extends object> {
  /** One line for `--help` and the docs. */
  readonly summary: string;
  /** The policy's own options with their defaults (empty when it has none). */
  readonly defaults: Required<O>;
  readonly create: (options: Required<O>) => QueuePolicy;
}

function entry<O extends object>(row: QueuePolicyEntry<O>): QueuePolicyEntry<O> {
  return row;
}

/** The replica queue policies, by name. Adding one is one row here (docs/adding-a-policy.md). */
const QUEUE_POLICIES = {
  fcfs: entry({
    summary: "first come, first served (vLLM's default)",
    defaults: {},
    create: createFcfsPolicy,
  }),
  lpm: entry({
    summary:
      "longest cached prefix first (SGLang's default); a queue longer than fcfsAbove is served unsorted, as SGLang does above 128",
    defaults: lpmDefaults,
    create: createLpmPolicy,
  }),
  'priority-groups': entry({
    summary:
      "Preble's priority groups by cached share: each batch proportional to rank, highest first (mode=rotation: the authors' one group per iteration)",
    defaults: priorityGroupsDefaults,
    create: createPriorityGroupsPolicy,
  }),
  larry: entry({
    summary: 'LARRY (seed 002): waiting time against the memory the prompt needs',
    defaults: larryDefaults,
    create: createLarryPolicy,
  }),
  'no-preempt': entry({
    summary: 'FCFS admitting only what fits with its whole output reserved (never preempts)',
    defaults: noPreemptDefaults,
    create: createNoPreemptPolicy,
  }),
  'splitwise-mixed': entry({
    summary:
      "Splitwise's mixed machines: new prompts first, preempting the youngest decodes when memory lacks; a decode aged past agingSeconds outranks prompts; at most maxPreemptions per request",
    defaults: splitwiseMixedDefaults,
    create: createSplitwiseMixedPolicy,
  }),
  trail: entry({
    summary:
      'TRAIL (seed 002): shortest predicted remaining output first (needs --predictor; oracle: TRAIL+); preempts a decode for a new request only in its first preemptWithin tokens',
    defaults: trailDefaults,
    create: createTrailPolicy,
  }),
  ltr: entry({
    summary:
      'LTR (seed 002): smallest predicted length (rank) first (needs --predictor, e.g. rank-oracle); a request waiting starvationSeconds goes first',
    defaults: ltrDefaults,
    create: createLtrPolicy,
  }),
  s3: entry({
    summary:
      'S3 (seed 002): FCFS reserving KV for the predicted output (needs --predictor); a request outrunning it is aborted and re-queued with a larger prediction',
    defaults: {},
    create: createS3Policy,
  }),
  pia: entry({
    summary:
      'PiA (seed 002): static batches of batchSize requests with similar predicted lengths (needs --predictor), formed when nothing runs',
    defaults: piaDefaults,
    create: createPiaPolicy,
  }),
  fastserve: entry({
    summary:
      'FastServe (seed 002): skip-join multi-level feedback queue (join level by prompt length, quanta of output tokens doubling per level, promotion after starveSeconds); preempts lower levels for a better waiting request, swapping their KV to the host pool (engine hostKvTokens)',
    defaults: fastServeDefaults,
    create: createFastServePolicy,
  }),
  tetriinfer: entry({
    summary:
      "TetriInfer's instance scheduling (seed 004): prefill order fcfs/sjf/ljf within PrefillSchedBatch requests; decode admission greedy, reserve-static or reserve-dynamic by predicted length",
    defaults: tetriInferQueueDefaults,
    create: createTetriInferQueuePolicy,
  }),
} as const;

export type QueuePolicyName = keyof typeof QUEUE_POLICIES;
export const queuePolicyNames = Object.keys(QUEUE_POLICIES) as QueuePolicyName[];

export function isQueuePolicyName(name: string): name is QueuePolicyName {
  return Object.hasOwn(QUEUE_POLICIES, name);
}

/** A fresh policy by name (each instance owns its scratch buffers); unknown names throw the list. */
export function createQueuePolicy(name: string, options: QueuePolicyOptions = {}): QueuePolicy {
  if (!isQueuePolicyName(name)) {
    throw new Error(`unknown queue policy '${name}'; valid names: ${queuePolicyNames.join(', ')}`);
  }
  const row = QUEUE_POLICIES[name] as QueuePolicyEntry<QueuePolicyOptions>;
  return row.create(withDefaults(row.defaults, options));
}

/**
 * `--queue-policy-option QUEUE.OPTION=VALUE`: one queue policy's option, typed by its default (e.g.
 * `lpm.fcfsAbove=Infinity`, lpm sorting a queue of any length). Unknown policies and options throw.
 */
export function parseQueuePolicyOption(text: string): {
  queuePolicy: QueuePolicyName;
  key: string;
  value: unknown;
} {
  const { owner: name, key, raw } = splitDottedOption('--queue-policy-option', 'QUEUE.OPTION=VALUE', text);
  if (!isQueuePolicyName(name))
    throw new Error(
      `--queue-policy-option: unknown queue policy '${name}'; valid: ${queuePolicyNames.join(', ')}`,
    );
  const defaults = QUEUE_POLICIES[name].defaults as object;
  if (!Object.hasOwn(defaults, key)) {
    const valid = Object.keys(defaults);
    throw new Error(
      `--queue-policy-option: unknown ${name} option '${key}'; ${valid.length === 0 ? 'it has none' : `valid: ${valid.join(', ')}`}`,
    );
  }
  const value = optionFromText(`--queue-policy-option: ${name} option`, key, raw, defaults);
  return { queuePolicy: name, key, value };
}

/** One line per queue policy with its options and defaults, for `--help`. */
export function describeQueuePolicies(): string[] {
  return queuePolicyNames.map((name) => {
    const row = QUEUE_POLICIES[name] as QueuePolicyEntry<object>;
    return describeWithDefaults(name, row.summary, row.defaults);
  });
}
