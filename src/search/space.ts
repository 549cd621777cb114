/**
 * The configuration space of a search (Vidur-Search's): GPU × tensor parallel × pipeline parallel ×
 * batch size (most running requests) × chunk size × replica queue policy × global policy × layout
 * (colocated replicas, or prefill and decode instances). `enumerateSpace` lists every point whose model
 * fits its GPUs and whose GPUs stay within the budget; `configurationScenario` makes one a scenario.
 */

import type { InstanceSpecInput } from '../core/fleet/spec.ts';
import type { QueuePolicyName } from '../core/replica-queue/registry.ts';
import { type ScenarioSpec, scenarioFleet } from './scenario.ts';

/** How the instances of one configuration are laid out. */
export type Layout =
  | { readonly kind: 'colocated'; readonly replicas: number }
  | { readonly kind: 'disaggregated'; readonly prefill: number; readonly decode: number };

/** One point of the space: every instance of it is alike (but for its role). */
export interface Configuration {
  readonly gpu: string;
  readonly tensorParallel: number;
  readonly pipelineParallel: number;
  /** Most requests an instance runs at once (the batch size). */
  readonly maxRunning: number;
  /** Chunked-prefill token budget per iteration. */
  readonly chunkTokens: number;
  readonly queuePolicy: QueuePolicyName;
  readonly policy: string;
  readonly layout: Layout;
}

export interface SearchSpace {
  /** A model shape name (`llama3-8b`). */
  readonly model: string;
  readonly gpus: readonly string[];
  readonly tensorParallel: readonly number[];
  readonly pipelineParallel: readonly number[];
  readonly maxRunning: readonly number[];
  readonly chunkTokens: readonly number[];
  readonly queuePolicies: readonly QueuePolicyName[];
  /** Global policies for colocated layouts. */
  readonly policies: readonly string[];
  /** Global policies for disaggregated layouts (default distserve). */
  readonly disaggregatedPolicies?: readonly string[];
  readonly layouts: readonly Layout[];
  /** Leave out configurations of more GPUs than this. */
  readonly maxGpus?: number;
  /** US dollars per GPU-hour, for GPUs without a listed price (or over it). */
  readonly prices?: Readonly<Record<string, number>>;
}

/** A layout as the `--fleet` shorthand writes it: 1M, 2P1D. */
export function layoutLabel(layout: Layout): string {
  return layout.kind === 'colocated' ? `${layout.replicas}M` : `${layout.prefill}P${layout.decode}D`;
}

/** One configuration on one line: `h100 tp2 pp1 batch 64 chunk 512 fcfs e2 1M`. */
export function configurationLabel(c: Configuration): string {
  return `${c.gpu} tp${c.tensorParallel} pp${c.pipelineParallel} batch ${c.maxRunning} chunk ${c.chunkTokens} ${c.queuePolicy} ${c.policy} ${layoutLabel(c.layout)}`;
}

/** One instance spec of configuration `c` for `model`: its role and count. */
export function instanceOf(
  model: string,
  c: Omit<Configuration, 'policy' | 'layout'>,
  role: 'mixed' | 'prefill' | 'decode',
  count: number,
  prices: Readonly<Record<string, number>> = {},
): InstanceSpecInput {
  const price = prices[c.gpu];
  const gpus = c.tensorParallel * c.pipelineParallel;
  // Pipeline stages reach the cost model only through a roofline name (`...x2p2`), whose GPU count is
  // TP x PP; a bare model with gpu and tensorParallel stands for one stage.
  const hardware =
    c.pipelineParallel === 1
      ? { model, gpu: c.gpu, tensorParallel: c.tensorParallel }
      : { model: `roofline:${model}@${c.gpu}x${c.tensorParallel}p${c.pipelineParallel}` };
  return {
    role,
    ...hardware,
    maxRunning: c.maxRunning,
    chunkTokens: c.chunkTokens,
    queuePolicy: c.queuePolicy,
    ...(price === undefined ? {} : { pricePerHour: price * gpus }),
    count,
  };
}

/** Instance specs of `configuration` for `model`, its layout's counts times `scale`. */
export function configurationInstances(
  model: string,
  c: Configuration,
  scale = 1,
  prices: Readonly<Record<string, number>> = {},
): InstanceSpecInput[] {
  return c.layout.kind === 'colocated'
    ? [instanceOf(model, c, 'mixed', c.layout.replicas * scale, prices)]
    : [
        instanceOf(model, c, 'prefill', c.layout.prefill * scale, prices),
        instanceOf(model, c, 'decode', c.layout.decode * scale, prices),
      ];
}

/** What a scenario takes besides the fleet and policy. */
export type ScenarioBase = Omit<ScenarioSpec, 'fleet' | 'policy'>;

/** The scenario of one configuration (its layout's counts times `scale`). */
export function configurationScenario(
  base: ScenarioBase,
  space: Pick<SearchSpace, 'model' | 'prices'>,
  c: Configuration,
  scale = 1,
): ScenarioSpec {
  return {
    ...base,
    policy: c.policy,
    fleet: { instances: configurationInstances(space.model, c, scale, space.prices) },
  };
}

export interface EnumeratedSpace {
  readonly configurations: readonly Configuration[];
  /** Points left out: the model does not fit (or the GPU is unknown), or too many GPUs. */
  readonly skipped: number;
  /** The first reason a point was left out, per GPU × TP × PP (for an empty space's error). */
  readonly reasons: readonly string[];
}

/** Every configuration of the space that fits, in a fixed order. */
export function enumerateSpace(space: SearchSpace): EnumeratedSpace {
  const configurations: Configuration[] = [];
  const reasons: string[] = [];
  let skipped = 0;
  const layoutPolicies = (layout: Layout) =>
    layout.kind === 'colocated' ? space.policies : (space.disaggregatedPolicies ?? ['distserve']);
  const perPoint = space.maxRunning.length * space.chunkTokens.length * space.queuePolicies.length;
  for (const gpu of space.gpus)
    for (const tensorParallel of space.tensorParallel)
      for (const pipelineParallel of space.pipelineParallel)
        for (const layout of space.layouts) {
          const count = perPoint * layoutPolicies(layout).length;
          const first: Configuration = {
            gpu,
            tensorParallel,
            pipelineParallel,
            maxRunning: space.maxRunning[0]!,
            chunkTokens: space.chunkTokens[0]!,
            queuePolicy: space.queuePolicies[0]!,
            policy: layoutPolicies(layout)[0]!,
            layout,
          };
          const reason = unfit(space, first);
          if (reason !== undefined) {
            skipped += count;
            reasons.push(
              `${gpu} tp${tensorParallel} pp${pipelineParallel} ${layoutLabel(layout)}: ${reason}`,
            );
            continue;
          }
          for (const maxRunning of space.maxRunning)
            for (const chunkTokens of space.chunkTokens)
              for (const queuePolicy of space.queuePolicies)
                for (const policy of layoutPolicies(layout))
                  configurations.push({ ...first, maxRunning, chunkTokens, queuePolicy, policy });
        }
  return { configurations, skipped, reasons };
}

/** Why a configuration cannot run (model too large, unknown GPU, over the GPU budget); undefined if it can. */
function unfit(space: SearchSpace, c: Configuration): string | undefined {
  const base: ScenarioBase = { workload: 'toolbench', requests: 1, seed: 0, slo: { ttft: 1, tpot: 1 } };
  try {
    const fleet = scenarioFleet(configurationScenario(base, space, c));
    const gpus = fleet.instances.reduce((sum, i) => sum + i.gpus, 0);
    if (space.maxGpus !== undefined && gpus > space.maxGpus)
      return `${gpus} GPUs, over --max-gpus ${space.maxGpus}`;
    return undefined;
  } catch (error) {
    return error instanceof Error ? error.message : String(error);
  }
}
