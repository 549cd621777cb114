import type { CostModel } from '../cost-model/types.ts';
import type { GlobalPolicy } from '../types.ts';
import { CacheAwarePolicy } from './cache-aware.ts';
import { type E2Options, E2Policy } from './e2/policy.ts';
import { KvCostPolicy } from './kv-cost.ts';
import { LeastLoadPolicy } from './least-load.ts';
import { PowerOfTwoPolicy } from './power-of-two.ts';
import { PrefixHashPolicy } from './prefix-hash.ts';
import { RandomPolicy } from './random.ts';
import { RoundRobinPolicy } from './round-robin.ts';
import { SalPolicy } from './sal.ts';

export const globalPolicyNames = [
  'e2',
  'round-robin',
  'random',
  'least-load',
  'power-of-two',
  'sal',
  'cache-aware',
  'kv-cost',
  'prefix-hash',
] as const;

export type GlobalPolicyName = (typeof globalPolicyNames)[number];

/** What a policy may need from its surroundings. */
export interface PolicyContext {
  /** The instances' cost model (E2 prices work with it). */
  readonly costModel: CostModel;
  /** Seed for policies that draw random numbers. */
  readonly seed?: number;
  /** E2 settings beyond the defaults (the ablation switches features off here). */
  readonly e2?: Partial<Omit<E2Options, 'costModel'>>;
}

export function isGlobalPolicyName(name: string): name is GlobalPolicyName {
  return (globalPolicyNames as readonly string[]).includes(name);
}

/** A fresh policy by name; an unknown name throws an error that lists the valid ones. */
export function createGlobalPolicy(name: string, context: PolicyContext): GlobalPolicy {
  const seed = context.seed ?? 0;
  switch (name) {
    case 'e2':
      return new E2Policy({ ...context.e2, costModel: context.costModel });
    case 'round-robin':
      return new RoundRobinPolicy();
    case 'random':
      return new RandomPolicy({ seed });
    case 'least-load':
      return new LeastLoadPolicy();
    case 'power-of-two':
      return new PowerOfTwoPolicy({ seed });
    case 'sal':
      return new SalPolicy();
    case 'cache-aware':
      return new CacheAwarePolicy();
    case 'kv-cost':
      return new KvCostPolicy({ seed });
    case 'prefix-hash':
      return new PrefixHashPolicy();
    default:
      throw new Error(`unknown policy '${name}'; valid policies: ${globalPolicyNames.join(', ')}`);
  }
}

/** Parse a comma list of policy names ('e2,round-robin'); 'all' means every policy. */
export function parsePolicyList(list: string): GlobalPolicyName[] {
  const names = list
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
  if (names.length === 1 && names[0] === 'all') return [...globalPolicyNames];
  if (names.length === 0) throw new Error(`no policy given; valid policies: ${globalPolicyNames.join(', ')}`);
  for (const n of names) {
    if (!isGlobalPolicyName(n))
      throw new Error(`unknown policy '${n}'; valid policies: ${globalPolicyNames.join(', ')}`);
  }
  return names as GlobalPolicyName[];
}
