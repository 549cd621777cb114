import { Random } from '../core/random.ts';
import { PoissonArrivals } from './arrivals.ts';
import {
  type BaseWorkloadName,
  type BaseWorkloadOptions,
  baseWorkloadNames,
  baseWorkloads,
} from './base-workloads.ts';
import { checkWorkloadOptions } from './stream.ts';
import type { WorkloadOptions, WorkloadRequest } from './types.ts';

export interface MixedComponent {
  readonly name: BaseWorkloadName;
  /** Relative share of the requests. Default 1. */
  readonly weight?: number;
  /** Extra options of that workload (its requests, rps and seed are set by the mix). */
  readonly options?: Partial<BaseWorkloadOptions>;
}

export interface MixedOptions extends WorkloadOptions {
  /** The workloads to mix, each at most once. Default: all five, equal weights. */
  readonly components?: readonly MixedComponent[];
}

/**
 * Several workloads interleaved into one Poisson stream at `rps`: each arrival takes the next request
 * of a component picked by weight, keeping its id, session and `workload` field. Within a component the
 * order is kept (an agent's steps stay in order); only the arrival times are re-drawn.
 */
export function mixed(options: MixedOptions): Iterable<WorkloadRequest> {
  checkWorkloadOptions(options);
  const components: readonly MixedComponent[] =
    options.components ?? baseWorkloadNames.map((name) => ({ name }));
  checkComponents(components);
  const weights = components.map((c) => c.weight ?? 1);
  const total = weights.reduce((a, b) => a + b, 0);
  // Seeds drawn up front, so that the components are built (and their options checked) right here.
  const seeds = new Random(options.seed);
  const arrivalSeed = seeds.int(0, 0x7fffffff);
  const choiceSeed = seeds.int(0, 0x7fffffff);
  const workloads = components.map((component, i) =>
    baseWorkloads[component.name]({
      ...(options.instances === undefined ? {} : { instances: options.instances }),
      ...component.options,
      requests: Number.POSITIVE_INFINITY,
      rps: (options.rps * weights[i]!) / total || options.rps,
      seed: seeds.int(0, 0x7fffffff),
    }),
  );
  return {
    [Symbol.iterator]: function* () {
      const arrivals = new PoissonArrivals(options.rps, new Random(arrivalSeed));
      const choice = new Random(choiceSeed);
      const streams = workloads.map((workload) => workload[Symbol.iterator]());
      for (let n = 0; n < options.requests; n++) {
        const component = pickByWeight(choice, weights, total);
        const next = streams[component]!.next();
        if (next.done) throw new Error(`mixed: component '${components[component]!.name}' ended`);
        yield { ...next.value, arrival: arrivals.next() };
      }
    },
  };
}

function checkComponents(components: readonly MixedComponent[]): void {
  if (components.length === 0) throw new Error('a mixed workload needs at least one component');
  const seen = new Set<string>();
  for (const { name, weight } of components) {
    if (!baseWorkloadNames.includes(name)) {
      throw new Error(`unknown workload '${name}' in a mix; valid: ${baseWorkloadNames.join(', ')}`);
    }
    // Two copies of one workload would yield the same request ids.
    if (seen.has(name)) throw new Error(`workload '${name}' appears twice in the mix`);
    seen.add(name);
    if (weight !== undefined && !(weight >= 0 && Number.isFinite(weight))) {
      throw new Error(`weight of '${name}' must be a non-negative number, got ${weight}`);
    }
  }
  if (components.every((c) => (c.weight ?? 1) === 0)) throw new Error('the weights of a mix sum to zero');
}

function pickByWeight(random: Random, weights: readonly number[], total: number): number {
  let u = random.next() * total;
  for (let i = 0; i < weights.length; i++) {
    u -= weights[i]!;
    if (u < 0 && weights[i]! > 0) return i;
  }
  // Rounding left u at (or just above) zero: the last component with weight.
  for (let i = weights.length - 1; i >= 0; i--) if (weights[i]! > 0) return i;
  throw new Error('the weights of a mix sum to zero');
}
