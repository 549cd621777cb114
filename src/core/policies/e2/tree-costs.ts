import { type ClusterNode, ClusterTree, type InstanceSlot } from '../../cluster-tree.ts';
import type { CostModel } from '../../cost-model/types.ts';
import type { InstanceCost, InstanceId, InstanceInfo, Tokens } from '../../types.ts';
import { BasePolicy } from '../base-policy.ts';

/**
 * E2's eviction-cost price of one LRU victim: PrefillTime(evicted tokens, at their context) x N_j,
 * N_j = the victim's windowed requests on the instance over the instance's (`requests`, set per call:
 * one function for all decisions, no closure allocated per decision). Shared by e2 and e2-plus.
 */
export class WindowShareVictimPricing {
  requests = 1;
  constructor(private readonly costModel: CostModel) {}
  readonly price = (node: ClusterNode, tokens: number, slot: InstanceSlot): number => {
    if (slot.windowCount === 0) return 0;
    return this.costModel.prefillTime(tokens, node.endLen - tokens) * (slot.windowCount / this.requests);
  };
}

/** -1, 0 or 1 as `cost` is below, level with (relative 1e-12) or above `best`. */
export function compareCost(cost: number, best: number): number {
  const tolerance = 1e-12 * Math.max(1, Math.abs(best));
  if (cost < best - tolerance) return -1;
  return cost > best + tolerance ? 1 : 0;
}

/** The KV capacity the global tree models for an instance: its own when known, else the cost model's. */
export function treeCapacity(info: InstanceInfo, costModel: CostModel): number {
  return Number.isFinite(info.kvCapacityTokens) ? info.kvCapacityTokens : costModel.kvCapacityTokens;
}

/**
 * A policy over the global prefix tree (e2, e2-plus): the tree learns instances with their KV capacity
 * and the engines' reported evictions here; the subclass names its cost model.
 */
export abstract class PrefixTreePolicy<C extends InstanceCost> extends BasePolicy<C> {
  readonly tree = new ClusterTree();
  protected abstract get treeCostModel(): CostModel;

  override instanceEvicted(
    instance: InstanceId,
    path: Tokens,
    keptTokens: number,
    now: number,
    evictedAt = now,
  ): void {
    this.tree.evictReported(instance, path, keptTokens, evictedAt);
  }

  override instanceAdded(instance: InstanceId, info: InstanceInfo, now: number): void {
    super.instanceAdded(instance, info, now);
    const capacity = treeCapacity(info, this.treeCostModel);
    this.tree.addInstance(instance, capacity, info.exclusivePrefixes === true);
  }
}
