import { type ClusterNode, ClusterTree, type InstanceSlot } from '../../cluster-tree.ts';
import type { CostModel } from '../../cost-model/types.ts';
import type {
  FinishCounts,
  InstanceCost,
  InstanceId,
  InstanceInfo,
  RouteDecision,
  RouteRequest,
  Tokens,
} from '../../types.ts';
import { BasePolicy } from '../base-policy.ts';

/**
 * E2's eviction-cost price of one LRU victim: PrefillTime(evicted tokens, at their context) x N_j,
 * N_j = the victim's windowed requests on the instance over the instance's (`requests`, set per call:
 * one function for all decisions, no closure allocated per decision), on the instance's cost model
 * (`model`, set per call where instances differ). Shared by e2 and e2-plus.
 */
export class WindowShareVictimPricing {
  requests = 1;
  constructor(public model: CostModel) {}
  readonly price = (node: ClusterNode, tokens: number, slot: InstanceSlot): number => {
    if (slot.windowCount === 0) return 0;
    return this.model.prefillTime(tokens, node.endLen - tokens) * (slot.windowCount / this.requests);
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

/** A routed prompt whose first token has not come yet: what routing marked as cached, and when. */
interface UnconfirmedPrompt {
  readonly instance: InstanceId;
  readonly tokens: Tokens;
  /** Tokens the instance was believed to cache before routing (the decision's `matchedTokens`). */
  readonly matched: number;
  readonly routedAt: number;
}

/**
 * A policy over the global prefix tree (e2, e2-plus): the tree learns instances with their KV capacity
 * and the engines' reported evictions here; the subclass names its cost model.
 *
 * Routing marks the prompt cached on the chosen instance. A request that fails before its first token
 * (a replica's 400 past its context length, the simulator's refusal by an instance too small for it, a
 * replica that died) left nothing there: the mark is taken back below what was cached before, unless a
 * request routed since goes through it. Without this, a follow-up sharing the prompt is sent back to
 * the instance that refused it, as to a cache hit.
 */
export abstract class PrefixTreePolicy<C extends InstanceCost> extends BasePolicy<C> {
  readonly tree = new ClusterTree();
  protected abstract get treeCostModel(): CostModel;
  private readonly unconfirmed = new Map<string, UnconfirmedPrompt>();

  override route(request: RouteRequest, now: number): RouteDecision<C> {
    const decision = super.route(request, now);
    this.unconfirmed.set(request.id, {
      instance: decision.instance,
      tokens: request.tokens,
      matched: decision.matchedTokens,
      routedAt: now,
    });
    return decision;
  }

  override requestFirstToken(id: string, now: number): void {
    super.requestFirstToken(id, now);
    this.unconfirmed.delete(id);
  }

  override requestFinished(id: string, now: number, counts: FinishCounts): void {
    this.unconfirmed.delete(id);
    super.requestFinished(id, now, counts);
  }

  override requestFailed(id: string, now: number): void {
    const prompt = this.unconfirmed.get(id);
    this.unconfirmed.delete(id);
    // Released first: the request's own pin must not keep its path.
    super.requestFailed(id, now);
    if (prompt !== undefined && this.view.has(prompt.instance))
      this.tree.evictReported(prompt.instance, prompt.tokens, prompt.matched, prompt.routedAt);
  }

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
