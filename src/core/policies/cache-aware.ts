import { ClusterTree } from '../cluster-tree.ts';
import type {
  InstanceCost,
  InstanceId,
  InstanceInfo,
  RouteDecision,
  RouteRequest,
  Tokens,
} from '../types.ts';
import { withDefaults } from '../with-defaults.ts';
import { BasePolicy } from './base-policy.ts';

export interface CacheAwareOptions {
  /**
   * Route to the longest match when (best cached tokens / prompt tokens) exceeds this. Default 0.3,
   * SGLang's current default; its early README and SMG's KV-events guide use 0.5.
   */
  readonly cacheThreshold?: number;
  /** Load is imbalanced only when max - min in-flight exceeds this. Default 64. */
  readonly balanceAbsThreshold?: number;
  /** ...and max in-flight exceeds this times min. Default 1.5. */
  readonly balanceRelThreshold?: number;
  /**
   * Tokens each instance's approximate tree may hold before its least recently used leaves go.
   * Default 2^26, SGLang's max_tree_size: far above any real KV cache, so like SGLang the tree
   * forgets only what the engine reports evicted. Set it to the instances' KV capacity to also
   * predict the engine's own LRU eviction.
   */
  readonly maxTreeTokens?: number;
}

export const CACHE_AWARE_BRANCHES = ['load', 'cache-hit', 'explore'] as const;
type CacheAwareBranch = (typeof CACHE_AWARE_BRANCHES)[number];

/** An instance's cost: the key of the branch taken, and its in-flight load. */
export interface CacheAwareCost extends InstanceCost {
  readonly load: number;
}

export const cacheAwareDefaults: Required<CacheAwareOptions> = {
  cacheThreshold: 0.3,
  balanceAbsThreshold: 64,
  balanceRelThreshold: 1.5,
  maxTreeTokens: 2 ** 26,
};

/**
 * SGLang model gateway's `cache_aware` policy, over tokens instead of characters. Per instance an
 * approximate tree of the prompts routed there (inserted at routing time, so a burst of siblings
 * finds the first one's prefix) and the router's own in-flight counts as load:
 * - imbalanced (max - min > abs AND max > rel x min): the least loaded instance (branch 'load');
 * - else if the best match rate among active instances > cacheThreshold: the longest match,
 *   ties to lower load (branch 'cache-hit');
 * - else the instance with the smallest tree (most room for a new prefix), ties to lower load
 *   (branch 'explore'). Remaining ties go to the lower id.
 * The prompt is always inserted into the chosen instance's tree. Costs report, per instance, the
 * quantity the taken branch minimised: in-flight requests, uncached prompt tokens, or tree tokens.
 */
export class CacheAwarePolicy extends BasePolicy<CacheAwareCost> {
  readonly name = 'cache-aware';
  readonly branches = CACHE_AWARE_BRANCHES;
  private readonly options: Required<CacheAwareOptions>;
  /** Exposed for tests and explanations; it must not be modified from outside. */
  readonly tree = new ClusterTree();
  /** Per-decision scratch, indexed like the active list (reused: no allocation per decision). */
  private loads = new Float64Array(16);
  private cached = new Float64Array(16);

  constructor(options: CacheAwareOptions = {}) {
    super();
    this.options = withDefaults(cacheAwareDefaults, options);
    const o = this.options;
    if (!(o.cacheThreshold >= 0 && o.cacheThreshold <= 1)) {
      throw new Error(`cache-aware: cacheThreshold must be in [0, 1], got ${o.cacheThreshold}`);
    }
    if (!(o.balanceAbsThreshold >= 0)) {
      throw new Error(`cache-aware: balanceAbsThreshold must be >= 0, got ${o.balanceAbsThreshold}`);
    }
    if (!(o.balanceRelThreshold >= 1)) {
      throw new Error(`cache-aware: balanceRelThreshold must be >= 1, got ${o.balanceRelThreshold}`);
    }
    if (!(o.maxTreeTokens > 0))
      throw new Error(`cache-aware: maxTreeTokens must be > 0, got ${o.maxTreeTokens}`);
  }

  protected choose(
    request: RouteRequest,
    _now: number,
    active: readonly InstanceId[],
  ): RouteDecision<CacheAwareCost> {
    const o = this.options;
    const n = active.length;
    const prompt = request.tokens.length;
    this.tree.match(request.tokens);
    if (this.loads.length < n) {
      this.loads = new Float64Array(Math.max(n, this.loads.length * 2));
      this.cached = new Float64Array(this.loads.length);
    }
    const loads = this.loads;
    const cachedOn = this.cached;
    let minLoad = Number.POSITIVE_INFINITY;
    let maxLoad = 0;
    let bestCached = 0;
    for (let k = 0; k < n; k++) {
      const id = active[k]!;
      const load = this.view.inflight(id);
      const cached = this.tree.cachedOn(id);
      loads[k] = load;
      cachedOn[k] = cached;
      if (load < minLoad) minLoad = load;
      if (load > maxLoad) maxLoad = load;
      if (cached > bestCached) bestCached = cached;
    }
    const branch: CacheAwareBranch =
      maxLoad - minLoad > o.balanceAbsThreshold && maxLoad > o.balanceRelThreshold * minLoad
        ? 'load'
        : prompt > 0 && bestCached / prompt > o.cacheThreshold
          ? 'cache-hit'
          : 'explore';

    // The branch's key per instance and its argmin (ties: lower load, then lower id).
    const costs: CacheAwareCost[] = new Array(n);
    let best = 0;
    let bestKey = Number.POSITIVE_INFINITY;
    for (let k = 0; k < n; k++) {
      const id = active[k]!;
      const load = loads[k]!;
      const cached = cachedOn[k]!;
      const key =
        branch === 'load' ? load : branch === 'cache-hit' ? prompt - cached : this.tree.usedTokens(id);
      if (key < bestKey || (key === bestKey && load < loads[best]!)) {
        best = k;
        bestKey = key;
      }
      costs[k] = { instance: id, total: key, load, matchedTokens: cached };
    }
    return { instance: active[best]!, branch, matchedTokens: cachedOn[best]!, costs };
  }

  override instanceAdded(instance: InstanceId, info: InstanceInfo, now: number): void {
    super.instanceAdded(instance, info, now);
    this.tree.addInstance(instance, this.options.maxTreeTokens);
  }

  override instanceRemoved(instance: InstanceId, now: number): void {
    super.instanceRemoved(instance, now);
    this.tree.deleteInstance(instance);
  }

  override instanceEvicted(
    instance: InstanceId,
    path: Tokens,
    keptTokens: number,
    now: number,
    evictedAt = now,
  ): void {
    super.instanceEvicted(instance, path, keptTokens, now, evictedAt);
    this.tree.evictReported(instance, path, keptTokens, evictedAt);
  }

  protected override onRouted(
    request: RouteRequest,
    decision: RouteDecision<CacheAwareCost>,
    now: number,
  ): void {
    const instance = decision.instance;
    // SGLang's tree holds no pins: the prompt is remembered as cached, and forgotten in LRU order.
    const leaf = this.tree.assign(request.tokens, instance, now, false);
    this.tree.releaseInflight(leaf, instance);
    this.tree.evictToCapacity(instance);
  }
}
