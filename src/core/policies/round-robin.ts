import type { InstanceId, RouteDecision, RouteRequest } from '../types.ts';
import { BasePolicy, NO_COSTS } from './base-policy.ts';
import { indexAfter } from './support/index-after.ts';

/** Round-robin has nothing to configure; the type exists so every policy takes an options object. */
export type RoundRobinOptions = Record<string, never>;

export const roundRobinDefaults: Required<RoundRobinOptions> = {};

/**
 * Cycles over the active instances in id order. It remembers the last id it chose, not a position,
 * so an instance that joins gets its turn in order and one that leaves or drains is simply skipped.
 */
export class RoundRobinPolicy extends BasePolicy {
  readonly name = 'round-robin';
  readonly branches = ['round-robin'] as const;
  private last: InstanceId = -1;

  constructor(_options: RoundRobinOptions = {}) {
    super();
  }

  protected choose(_request: RouteRequest, _now: number, active: readonly InstanceId[]): RouteDecision {
    const instance = active[indexAfter(active, this.last)]!;
    this.last = instance;
    return { instance, branch: 'round-robin', matchedTokens: 0, costs: NO_COSTS };
  }
}
