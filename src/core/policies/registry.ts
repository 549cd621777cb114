import { prefillSaturationTokens } from '../cost-model/prefill-saturation.ts';
import type { CostModel } from '../cost-model/types.ts';
import type { QueuePolicyName, QueuePolicyOptions } from '../replica-queue/registry.ts';
import type { GlobalPolicy, Role } from '../types.ts';
import { describeWithDefaults, optionFromText, splitDottedOption, withDefaults } from '../with-defaults.ts';
import { aladdinDefaults } from './aladdin/options.ts';
import { AladdinPolicy } from './aladdin/policy.ts';
import { CacheAwarePolicy, cacheAwareDefaults } from './cache-aware.ts';
import { DistServePolicy, distServeDefaults } from './disagg/distserve.ts';
import { PrefixAwarePdPolicy, prefixPdDefaults } from './disagg/prefix-aware.ts';
import { SplitwisePolicy, splitwiseDefaults } from './disagg/splitwise.ts';
import { tetriInferDefaults } from './disagg/tetriinfer/options.ts';
import { TetriInferPolicy } from './disagg/tetriinfer/policy.ts';
import { E2_DEFAULTS } from './e2/options.ts';
import { E2Policy } from './e2/policy.ts';
import { E2_PLUS_DEFAULTS } from './e2-plus/options.ts';
import { E2PlusPolicy } from './e2-plus/policy.ts';
import { KvCostPolicy, kvCostDefaults } from './kv-cost.ts';
import { LeastLoadPolicy, leastLoadDefaults } from './least-load.ts';
import { LlumnixPolicy, llumnixDefaults } from './llumnix/policy.ts';
import { PowerOfTwoPolicy, powerOfTwoDefaults } from './power-of-two.ts';
import { PrefixHashPolicy, prefixHashDefaults } from './prefix-hash.ts';
import { RandomPolicy, randomDefaults } from './random.ts';
import { RoundRobinPolicy, roundRobinDefaults } from './round-robin.ts';
import { SalPolicy, salDefaults } from './sal.ts';

/** What a policy may need from its surroundings (the same for every policy). */
export interface PolicyContext {
  /** The instances' cost model (policies that price work use it). */
  readonly costModel: CostModel;
  /** The run's seed: the default of a policy's `runSeed` option. */
  readonly seed?: number;
  /** The run's SLO targets in seconds, for SLO-aware policies (aladdin). */
  readonly slo?: { readonly ttft: number; readonly tpot: number };
}

/** How a prefill instance batches prompts: a token budget per iteration, chunked or not (engine options). */
export interface PrefillBatching {
  readonly chunkedPrefillTokens: number;
  /** false: a prompt past the budget's remainder runs whole, last in its batch (alone at its head). */
  readonly enableChunking: boolean;
  /** Pad a short iteration's prefill to the budget, the padding computed (TetriInfer's fixed chunks). */
  readonly padPrefillChunks?: boolean;
}

/** One row of the registry: what the policy is, its options with their defaults, how to build it. */
export interface PolicyEntry<O extends object> {
  /** One line for `--help` and the docs. */
  readonly summary: string;
  /** Every option with its default: the option names, their types and the defaults come from here. */
  readonly defaults: O;
  /** The option that defaults to the run's seed rather than its own default, if any. */
  readonly runSeed?: keyof O;
  /** Options renamed since a release: old name -> new name (refused with a hint). */
  readonly renamed?: Readonly<Record<string, keyof O & string>>;
  readonly create: (options: O, context: PolicyContext) => GlobalPolicy;
  /** The engines' queue policy when the run says 'auto' (default: lpm, see sim/run.ts). */
  readonly engineQueuePolicy?: QueuePolicyName;
  /**
   * Over `engineQueuePolicy`, for the instances of a role (their role when built), when the run says
   * 'auto' and the instance sets none: Splitwise's mixed machines run `splitwise-mixed`.
   */
  readonly engineQueuePolicyByRole?: Readonly<Partial<Record<Role, QueuePolicyName>>>;
  /** The engines' prefill token budget per iteration when the run sets none (default: the engine's). */
  readonly engineChunkTokens?: number;
  /**
   * The prefill instances' batching, from each one's cost model, when neither the run nor the instance
   * sets a chunk budget (over `engineChunkTokens`): DistServe's L_m as the budget, unchunked.
   */
  readonly prefillBatching?: (costModel: CostModel, options?: O) => PrefillBatching;
  /** The engines' queue-policy options from the policy's own (TetriInfer's prefill order, decode admission). */
  readonly engineQueuePolicyOptions?: (options: O) => QueuePolicyOptions;
}

/** Identity with inference: each row is type-checked against its own options. */
function entry<O extends object>(row: PolicyEntry<O>): PolicyEntry<O> {
  return row;
}

/** The global policies, by name. Adding a policy is one row here (docs/adding-a-policy.md). */
const POLICIES = {
  e2: entry({
    summary: "Preble's E2 (paper and authors' code): exploit cached prefixes, else explore by L + M + P",
    defaults: E2_DEFAULTS,
    renamed: {
      autoscale: 'prefixReplication',
      autoscaleFactor: 'replicationFactor',
      autoscaleMinSamples: 'replicationMinSamples',
      autoscaleMinQueueSeconds: 'replicationMinQueueSeconds',
      pdBalance: 'phaseMix',
      pdImbalanceRatio: 'phaseMixRatio',
      pdLoadGuard: 'phaseMixLoadGuard',
    },
    create: (o, context) => new E2Policy({ ...o, costModel: context.costModel }),
  }),
  'round-robin': entry({
    summary: 'cycles over the active instances in id order',
    defaults: roundRobinDefaults,
    create: (o) => new RoundRobinPolicy(o),
  }),
  random: entry({
    summary: 'a seeded uniform pick among the active instances',
    defaults: randomDefaults,
    runSeed: 'seed',
    create: (o) => new RandomPolicy(o),
  }),
  'least-load': entry({
    summary: 'the instance with the fewest requests in flight',
    defaults: leastLoadDefaults,
    create: (o) => new LeastLoadPolicy(o),
  }),
  'power-of-two': entry({
    summary: 'two random instances, the less loaded of them',
    defaults: powerOfTwoDefaults,
    runSeed: 'seed',
    create: (o) => new PowerOfTwoPolicy(o),
  }),
  sal: entry({
    summary: 'shortest anticipated latency: queued prefill work and memory from polled load (seed 002)',
    defaults: salDefaults,
    create: (o) => new SalPolicy(o),
  }),
  'cache-aware': entry({
    summary: "SGLang gateway's cache-aware routing: longest cached match unless load is imbalanced",
    defaults: cacheAwareDefaults,
    create: (o) => new CacheAwarePolicy(o),
  }),
  'kv-cost': entry({
    summary: "NVIDIA Dynamo's KV router: prefill blocks net of overlap plus decode blocks, softmax pick",
    defaults: kvCostDefaults,
    runSeed: 'seed',
    create: (o) => new KvCostPolicy(o),
  }),
  'prefix-hash': entry({
    summary: "consistent hashing of the prompt's first tokens with bounded load",
    defaults: prefixHashDefaults,
    create: (o) => new PrefixHashPolicy(o),
  }),
  'e2-plus': entry({
    summary:
      'ours beyond E2: one cost comparison over all instances, marginal latency from current work + own miss',
    defaults: E2_PLUS_DEFAULTS,
    create: (o, context) => new E2PlusPolicy({ ...o, costModel: context.costModel }),
  }),
  llumnix: entry({
    summary:
      'Llumnix (OSDI 24): the instance with the most freeness ((KV capacity - virtual usage) / batch size); at ticks, live-migrates a decoding request from the least to the most free instance (load balance, de-fragmentation, priority headroom)',
    defaults: llumnixDefaults,
    create: (o) => new LlumnixPolicy(o),
  }),
} as const;

/**
 * The disaggregated policies: they place a request's prefill and decode on a fleet's prefill and
 * decode instances (`RouteDecision.decode`), so they run only on such fleets; 'all' and the experiments
 * that compare every colocated policy (`globalPolicyNames`) leave them out.
 */
const DISAGGREGATED_POLICIES = {
  distserve: entry({
    summary:
      'DistServe (OSDI 24): prefill on the prefill instance with the shortest prefill queue (FCFS, batches up to L_m tokens from the cost model), decode on the decode instance with the fewest requests, picked when the KV is ready',
    defaults: distServeDefaults,
    engineQueuePolicy: 'fcfs',
    prefillBatching: (costModel) => ({
      chunkedPrefillTokens: prefillSaturationTokens(costModel),
      enableChunking: false,
    }),
    create: (o) => new DistServePolicy(o),
  }),
  splitwise: entry({
    summary:
      'Splitwise (ISCA 24): a (prompt, token) machine pair at arrival by the shortest pending-token queues, the mixed pool past a queue threshold, serialized KV below 512 prompt tokens and layer-wise above; FCFS, 2,048-token prompt batches',
    defaults: splitwiseDefaults,
    engineQueuePolicy: 'fcfs',
    engineQueuePolicyByRole: { mixed: 'splitwise-mixed' },
    engineChunkTokens: 2048,
    create: (o) => new SplitwisePolicy(o),
  }),
  'prefix-pd': entry({
    summary:
      'prefix-aware disaggregation: a colocated policy (prefillPolicy, E2) places prefills among the prefill and mixed instances; a request is disaggregated only when its uncached prefill takes over colocatedPrefillSeconds, its decode going to the decode instance with the least uncached-KV transfer plus decode time',
    defaults: prefixPdDefaults,
    create: (o, context): GlobalPolicy => {
      if (!Object.hasOwn(POLICIES, o.prefillPolicy))
        throw new Error(
          `prefix-pd option 'prefillPolicy' must be a colocated policy (${globalPolicyNames.join(', ')}), got '${o.prefillPolicy}'`,
        );
      const inner: GlobalPolicy = createGlobalPolicy(o.prefillPolicy as string, context);
      return new PrefixAwarePdPolicy({ ...o, costModel: context.costModel, inner });
    },
  }),
  tetriinfer: entry({
    summary:
      'TetriInfer (seed 004): least-loaded prefill instance running padded fixed-size chunks, FCFS/SJF/LJF within PrefillSchedBatch; at KV-ready power-of-two over the decode instances with room for the predicted length, lower heavy:light ratio, from periodic load broadcasts; reserve-by-prediction decode admission; idle instances flip role',
    defaults: tetriInferDefaults,
    runSeed: 'seed',
    engineQueuePolicy: 'tetriinfer',
    prefillBatching: (_costModel, o = tetriInferDefaults) => ({
      chunkedPrefillTokens: o.chunkSize,
      enableChunking: o.chunkedPrefill,
      padPrefillChunks: o.chunkedPrefill && o.padChunks,
    }),
    engineQueuePolicyOptions: (o) => ({
      prefillOrder: o.prefillOrder,
      prefillSchedBatch: o.prefillSchedBatch,
      decodeAdmission: o.decodeAdmission,
      reserveFrom: o.reserveFrom,
    }),
    create: (o) => new TetriInferPolicy(o),
  }),
  aladdin: entry({
    summary:
      'Aladdin (seed 004): SLO-aware best fit, the most loaded worker that still meets TTFT, ATGT (gamma, theta) and KV per future iteration, from performance models refit online; colocated or split phase; asks a provisioner for workers when none fits; re-balances requests not started at each tick (Algorithm 2, queued moves: simulator only)',
    defaults: aladdinDefaults,
    create: (o, context) =>
      new AladdinPolicy(o, {
        costModel: context.costModel,
        ...(context.slo === undefined ? {} : { slo: context.slo }),
      }),
  }),
} as const;

const ALL_POLICIES = { ...POLICIES, ...DISAGGREGATED_POLICIES };

type Policies = typeof ALL_POLICIES;
export type GlobalPolicyName = keyof Policies;
/** The options of one policy, every one optional: `undefined` means the default. */
export type PolicyOptions<N extends GlobalPolicyName> =
  Policies[N] extends PolicyEntry<infer O> ? { readonly [K in keyof O]?: O[K] | undefined } : never;

/** The colocated policies (every one runs on any fleet of mixed instances): what 'all' means. */
export const globalPolicyNames = Object.keys(POLICIES) as GlobalPolicyName[];

/** The disaggregated policies (prefill and decode instances only), named one by one. */
export const disaggregatedPolicyNames = Object.keys(DISAGGREGATED_POLICIES) as GlobalPolicyName[];

export function isGlobalPolicyName(name: string): name is GlobalPolicyName {
  return Object.hasOwn(ALL_POLICIES, name);
}

export function isDisaggregatedPolicyName(name: string): boolean {
  return Object.hasOwn(DISAGGREGATED_POLICIES, name);
}

const validNames = () => [...globalPolicyNames, ...disaggregatedPolicyNames].join(', ');

/** The registry row of a policy; an unknown name throws an error that lists the valid ones. */
export function policyEntry(name: string): PolicyEntry<object> {
  if (!isGlobalPolicyName(name)) {
    throw new Error(`unknown policy '${name}'; valid policies: ${validNames()}`);
  }
  return ALL_POLICIES[name] as PolicyEntry<object>;
}

/**
 * Options checked against the policy's defaults: every name known (a renamed one gets a hint), every
 * value of its default's type or undefined. Throws one line naming the first bad option.
 */
export function checkPolicyOptions(name: string, options: Readonly<Record<string, unknown>>): void {
  const row = policyEntry(name);
  const defaults = row.defaults as Record<string, unknown>;
  for (const [key, value] of Object.entries(options)) {
    const renamedTo = row.renamed?.[key];
    if (renamedTo !== undefined)
      throw new Error(`${name} option '${key}' was renamed '${String(renamedTo)}'`);
    if (!Object.hasOwn(defaults, key)) {
      const valid = Object.keys(defaults);
      throw new Error(
        `unknown ${name} option '${key}'; ${valid.length === 0 ? `${name} has no options` : `valid: ${valid.join(', ')}`}`,
      );
    }
    if (value !== undefined && typeof value !== typeof defaults[key]) {
      throw new Error(
        `${name} option '${key}' must be a ${typeof defaults[key]}, got ${JSON.stringify(value)}`,
      );
    }
  }
}

/** A fresh policy by name, its options over the registry's defaults (`undefined` keeps a default). */
export function createGlobalPolicy<N extends GlobalPolicyName>(
  name: N,
  context: PolicyContext,
  options?: PolicyOptions<N>,
): GlobalPolicy;
export function createGlobalPolicy(
  name: string,
  context: PolicyContext,
  options?: Readonly<Record<string, unknown>>,
): GlobalPolicy;
export function createGlobalPolicy(name: string, context: PolicyContext, given: object = {}): GlobalPolicy {
  const row = policyEntry(name) as PolicyEntry<Record<string, unknown>>;
  return row.create(resolvePolicyOptions(name, given, context.seed), context);
}

/** A policy's options checked and over its defaults (the run's seed for its `runSeed` option). */
export function resolvePolicyOptions(
  name: string,
  given: object = {},
  seed?: number,
): Record<string, unknown> {
  const options = given as Readonly<Record<string, unknown>>;
  checkPolicyOptions(name, options);
  const row = policyEntry(name) as PolicyEntry<Record<string, unknown>>;
  const defaults =
    row.runSeed !== undefined && seed !== undefined ? { ...row.defaults, [row.runSeed]: seed } : row.defaults;
  return withDefaults(defaults, options);
}

/** Parse a comma list of policy names ('e2,round-robin'); 'all' means every colocated policy. */
export function parsePolicyList(list: string): GlobalPolicyName[] {
  const names = list
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
  if (names.length === 1 && names[0] === 'all') return [...globalPolicyNames];
  if (names.length === 0) throw new Error(`no policy given; valid policies: ${validNames()}`);
  for (const n of names) policyEntry(n);
  return names as GlobalPolicyName[];
}

/**
 * Parse `POLICY.OPTION=VALUE` (the CLI's --policy-option) into a typed value: the option's default
 * says whether VALUE is a number, a boolean or a string. Throws one line naming what is wrong.
 */
export function parsePolicyOption(text: string): { policy: GlobalPolicyName; key: string; value: unknown } {
  const { owner: policy, key, raw } = splitDottedOption('--policy-option', 'POLICY.OPTION=VALUE', text);
  const row = policyEntry(policy);
  checkPolicyOptions(policy, { [key]: undefined });
  const value = optionFromText(`${policy} option`, key, raw, row.defaults);
  return { policy: policy as GlobalPolicyName, key, value };
}

/**
 * `--policy-option` texts grouped by policy, later values of one option over earlier ones; `check`
 * (given the text and its policy) throws where the caller's context has no such policy.
 */
export function groupPolicyOptions(
  given: readonly string[],
  check: (text: string, policy: GlobalPolicyName) => void = () => {},
): Map<GlobalPolicyName, Record<string, unknown>> {
  const byPolicy = new Map<GlobalPolicyName, Record<string, unknown>>();
  for (const text of given) {
    const { policy, key, value } = parsePolicyOption(text);
    check(text, policy);
    byPolicy.set(policy, { ...byPolicy.get(policy), [key]: value });
  }
  return byPolicy;
}

/** One line per policy with its options and defaults, for `--help`. */
export function describeGlobalPolicies(): string[] {
  return [...globalPolicyNames, ...disaggregatedPolicyNames].map((name) => {
    const row = ALL_POLICIES[name] as PolicyEntry<object>;
    return describeWithDefaults(name, row.summary, row.defaults);
  });
}
