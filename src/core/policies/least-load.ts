import type { InstanceId, RouteDecision, RouteRequest } from '../types.ts';
import { withDefaults } from '../with-defaults.ts';
import { BasePolicy, NO_COSTS } from './base-policy.ts';
import { indexAfter } from './support/index-after.ts';

export interface LeastLoadOptions {
  /**
   * How ties in the in-flight count are broken. 'rotate' (default) starts the scan after the last
   * chosen instance, so an idle cluster is filled in turn; 'lowest-id' always prefers the lowest id,
   * which sends every request of a sparse stream (each done before the next) to one instance.
   */
  readonly tieBreak?: 'rotate' | 'lowest-id';
}

export const leastLoadDefaults: Required<LeastLoadOptions> = { tieBreak: 'rotate' };

/** Fewest in-flight requests, as counted by the router itself (no polling). */
export class LeastLoadPolicy extends BasePolicy {
  readonly name = 'least-load';
  readonly branches = ['load'] as const;
  private readonly rotate: boolean;
  private last: InstanceId = -1;

  constructor(options: LeastLoadOptions = {}) {
    super();
    const { tieBreak } = withDefaults(leastLoadDefaults, options);
    if (tieBreak !== 'rotate' && tieBreak !== 'lowest-id') {
      throw new Error(`least-load: tieBreak must be 'rotate' or 'lowest-id', got ${String(tieBreak)}`);
    }
    this.rotate = tieBreak === 'rotate';
  }

  protected choose(_request: RouteRequest, _now: number, active: readonly InstanceId[]): RouteDecision {
    const start = this.rotate ? indexAfter(active, this.last) : 0;
    const instance = this.view.leastInflight(active, start);
    this.last = instance;
    return { instance, branch: 'load', matchedTokens: 0, costs: NO_COSTS };
  }
}
