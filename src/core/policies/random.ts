import { Random } from '../random.ts';
import type { InstanceId, RouteDecision, RouteRequest } from '../types.ts';
import { withDefaults } from '../with-defaults.ts';
import { BasePolicy, NO_COSTS } from './base-policy.ts';

export interface RandomOptions {
  /** Seed of the choice stream: the same seed and request stream give the same routing. Default 0. */
  readonly seed?: number;
}

export const randomDefaults: Required<RandomOptions> = { seed: 0 };

/** Uniform seeded choice among the active instances. */
export class RandomPolicy extends BasePolicy {
  readonly name = 'random';
  readonly branches = ['random'] as const;
  private readonly random: Random;

  constructor(options: RandomOptions = {}) {
    super();
    this.random = new Random(withDefaults(randomDefaults, options).seed);
  }

  protected choose(_request: RouteRequest, _now: number, active: readonly InstanceId[]): RouteDecision {
    return { instance: this.random.pick(active), branch: 'random', matchedTokens: 0, costs: NO_COSTS };
  }
}
