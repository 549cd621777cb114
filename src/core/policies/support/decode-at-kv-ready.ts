import type { InstanceCost, InstanceId } from '../../types.ts';
import { BasePolicy } from '../base-policy.ts';

/**
 * A policy that names a request's decode instance when its KV is ready (`routeDecode`; DistServe,
 * TetriInfer, Aladdin, prefix-aware PD). A retry's `avoid` (decode instances that refused the request
 * as too long for their KV) is closed to the choice, as `route`'s is to the first.
 */
export abstract class DecodeAtKvReadyPolicy<C extends InstanceCost = InstanceCost> extends BasePolicy<C> {
  routeDecode(
    id: string,
    prefillInstance: InstanceId,
    kvTokens: number,
    now: number,
    avoid: readonly InstanceId[] = [],
  ): InstanceId {
    return this.view.withAvoided(avoid, () => this.chooseDecode(id, prefillInstance, kvTokens, now));
  }

  /** The decode instance among the active ones (throws NoInstanceAvailableError when there is none). */
  protected abstract chooseDecode(
    id: string,
    prefillInstance: InstanceId,
    kvTokens: number,
    now: number,
  ): InstanceId;
}
