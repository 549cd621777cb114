import type { ClusterMatch, ClusterNode } from '../../cluster-tree.ts';
import type { CostModel } from '../../cost-model/types.ts';
import type { FinishCounts, InstanceId, InstanceInfo, RouteDecision, RouteRequest } from '../../types.ts';
import { SlidingWindow } from '../../window.ts';
import { withDefaults } from '../../with-defaults.ts';
import { keyPortionOf } from './key-portion.ts';
import { InstanceLoad, LoadEstimator, type WindowEntry } from './load.ts';
import { E2_BRANCHES, E2_DEFAULTS, type E2Branch, type E2InstanceCost, type E2Options } from './options.ts';
import { QueueTimeDetector, splitSubtreeByLoad } from './prefix-replication.ts';
import { type MovableLoad, planRebalance, RedirectTable } from './rebalance.ts';
import { compareCost, PrefixTreePolicy, WindowShareVictimPricing } from './tree-costs.ts';

/** Live window entries of one instance ending at one leaf. */
export interface LeafLoad {
  prefillSeconds: number;
  count: number;
}

interface Candidate {
  instance: InstanceId;
  via: E2Branch;
}

/** A replica added by prefix replication: requests through `node` may also run on `instance`. */
interface PrefixReplica {
  readonly instance: InstanceId;
  readonly at: number;
  /** Children of the prefix whose load stayed with the original instance: not the replica's. */
  readonly stayed: ReadonlySet<ClusterNode>;
}

/**
 * Preble's E2 global scheduler (paper 3.2, Algorithms 1 and 2). Exploit when the longest cached
 * prefix is longer than the rest of the prompt, choosing by load cost among the instances that
 * cache the deepest matched node; otherwise explore: prefill/decode balancing first, then the
 * lowest load cost L + M + P over all instances. Rebalancing and prefix replication adjust where future
 * exploit traffic goes. Every cost is kept incrementally: no decision scans the tree or the window.
 */
export class E2Policy extends PrefixTreePolicy<E2InstanceCost> {
  readonly name = 'e2';
  readonly branches = E2_BRANCHES;
  readonly options: E2Options;
  private readonly window: SlidingWindow<WindowEntry>;
  private readonly loads: InstanceLoad[] = [];
  /**
   * Per instance, the live window entries' prefill seconds and count by leaf node, kept as entries
   * enter, change and leave the window, so that background work (rebalancing, prefix replication)
   * reads the distinct leaves of the instances concerned instead of scanning the whole window. A live
   * entry's leaf is a stable object (a split keeps it as the tail; a node on a windowed path is
   * never merged away or removed).
   */
  private readonly leafLoads: Map<ClusterNode, LeafLoad>[] = [];
  private readonly cluster = { finished: 0, outputTokens: 0 };
  private readonly estimator: LoadEstimator;
  /** In-flight requests' window entries (the entry's time is when it was routed). */
  private readonly inflightEntries = new Map<string, WindowEntry>();
  private readonly redirects = new RedirectTable();
  private readonly replicas = new Map<ClusterNode, PrefixReplica[]>();
  private readonly queueTimes: QueueTimeDetector;
  private lastRebalance = Number.NEGATIVE_INFINITY;
  private lastExpiry = Number.NEGATIVE_INFINITY;
  /** The match taken in `choose`, reused by `onRouted` to insert without walking the prompt again. */
  private routingMatch: ClusterMatch | null = null;
  private exploreFor: readonly InstanceId[] | null = null;
  private exploreList: readonly Candidate[] = [];
  private readonly victimPricing: WindowShareVictimPricing;

  constructor(options: Partial<E2Options> & { costModel: CostModel }) {
    super();
    this.options = { ...withDefaults(E2_DEFAULTS, options), costModel: options.costModel };
    if (!['relative', 'absolute'].includes(this.options.phaseMixTest))
      throw new Error(
        `e2 option 'phaseMixTest' must be 'relative' or 'absolute', got '${this.options.phaseMixTest}'`,
      );
    if (!['window', 'inflight'].includes(this.options.decodeLoad))
      throw new Error(
        `e2 option 'decodeLoad' must be 'window' or 'inflight', got '${this.options.decodeLoad}'`,
      );
    if (!['key-portion', 'deepest'].includes(this.options.exploitCandidates))
      throw new Error(
        `e2 option 'exploitCandidates' must be 'key-portion' or 'deepest', got '${this.options.exploitCandidates}'`,
      );
    this.window = new SlidingWindow(this.options.windowSeconds);
    this.victimPricing = new WindowShareVictimPricing(this.options.costModel);
    this.estimator = new LoadEstimator(this.options.costModel, this.options.defaultOutputTokens);
    this.queueTimes = new QueueTimeDetector(
      this.options.windowSeconds / 2,
      this.options.replicationFactor,
      this.options.replicationMinSamples,
      this.options.replicationMinQueueSeconds,
    );
    this.tree.onSplit = (head, tail) => this.keyPortionSplit(head, tail);
    // A merged-away parent's state continues in the child that now holds its tokens.
    this.tree.onMerge = (parent, child) => this.moveKeyPortionState(parent, child);
    this.tree.onRemove = (node) => {
      this.redirects.forgetNode(node);
      this.replicas.delete(node);
      this.queueTimes.forgetNode(node);
    };
  }

  /** L_i: the instance's windowed load in seconds. */
  loadOf(instance: InstanceId): number {
    const load = this.loadFor(instance);
    const decoding = this.options.decodeLoad === 'inflight' ? this.view.inflight(instance) : load.requests;
    return this.estimator.load(load, this.cluster, decoding);
  }

  /** Cached-token share of the instance's windowed prompts (the phase-mix balancing signal). */
  decodeRatioOf(instance: InstanceId): number {
    return this.loads[instance]?.decodeRatio ?? 0;
  }

  get windowSize(): number {
    return this.window.size;
  }

  protected choose(
    request: RouteRequest,
    now: number,
    active: readonly InstanceId[],
  ): RouteDecision<E2InstanceCost> {
    // Window expiry is background bookkeeping (tick); routing does it only if ticks fell behind.
    if (now - this.lastExpiry > this.options.maxWindowStaleness) this.expireWindow(now);
    const tokens = request.tokens;
    const match = this.tree.match(tokens);
    this.routingMatch = match;
    const mark = this.tree.markPath(match.path);
    const { cached, holders } = this.longestCachedAmongActive(match, active);
    const missed = tokens.length - cached;

    if (cached > 0 && missed < cached) {
      const owners =
        this.options.exploitCandidates === 'key-portion'
          ? this.keyPortionHolders(match, cached, holders)
          : holders;
      const candidates = this.exploitCandidates(match.path, owners, active);
      return this.cheapest(candidates, tokens.length, mark);
    }

    const decision = this.cheapest(this.exploreCandidates(active), tokens.length, mark);
    if (!this.options.phaseMix) return decision;
    return this.preferDecodeHeavy(decision, active) ?? decision;
  }

  protected override onRouted(
    request: RouteRequest,
    decision: RouteDecision<E2InstanceCost>,
    now: number,
  ): void {
    const instance = decision.instance;
    // The window needs times in order; a caller's clock that steps back must not break accounting.
    const time = this.window.timeFrom(now);
    const leaf = this.tree.assign(request.tokens, instance, time, true, this.routingMatch ?? undefined);
    this.routingMatch = null;
    const cached = decision.matchedTokens;
    const entry: WindowEntry = {
      time,
      id: request.id,
      instance,
      leaf,
      promptTokens: request.tokens.length,
      cachedTokens: cached,
      prefillSeconds: this.options.costModel.prefillTime(request.tokens.length - cached, cached),
      outputTokens: -1,
      live: true,
      expired: false,
    };
    this.window.push(entry);
    this.windowAdd(entry);
    this.inflightEntries.set(request.id, entry);
    if (this.options.predictEvictions) this.tree.evictToCapacity(instance);
  }

  override requestStarted(id: string, now: number): void {
    if (!this.options.prefixReplication) return;
    const entry = this.inflightEntries.get(id);
    if (entry === undefined || !entry.live || !this.view.has(entry.instance)) return;
    const kp = keyPortionOf(entry.leaf);
    if (kp !== null) this.queueTimes.record(kp, entry.instance, now - entry.time, now);
  }

  protected override onReleased(
    id: string,
    instance: InstanceId,
    _now: number,
    counts: FinishCounts | undefined,
  ): void {
    const entry = this.inflightEntries.get(id);
    if (entry === undefined) return;
    this.inflightEntries.delete(id);
    this.tree.releaseInflight(entry.leaf, instance);
    if (!entry.live) return;
    if (counts === undefined) {
      // A failed request did no (complete) work: it leaves the window's load and counts now.
      this.dropFromWindow(entry);
      return;
    }
    const inWindow = !entry.expired;
    if (inWindow) this.windowRemove(entry);
    entry.outputTokens = counts.outputTokens;
    if (counts.promptTokens > 0) {
      // The engine's own count of cached tokens is the truth; keep our token units by using its share.
      const share = Math.min(1, Math.max(0, counts.cachedTokens / counts.promptTokens));
      entry.cachedTokens = Math.round(entry.promptTokens * share);
      const missed = entry.promptTokens - entry.cachedTokens;
      entry.prefillSeconds = this.options.costModel.prefillTime(missed, entry.cachedTokens);
    }
    if (inWindow) {
      this.windowAdd(entry);
      this.cluster.finished++;
      this.cluster.outputTokens += entry.outputTokens;
    }
  }

  override instanceAdded(instance: InstanceId, info: InstanceInfo, now: number): void {
    super.instanceAdded(instance, info, now);
    this.loadFor(instance);
  }

  protected get treeCostModel(): CostModel {
    return this.options.costModel;
  }

  override instanceRemoved(instance: InstanceId, now: number): void {
    super.instanceRemoved(instance, now);
    // A replica that comes back under this id is a fresh engine: none of the old load is its own.
    for (const e of this.window.entries()) if (e.instance === instance && e.live) this.dropFromWindow(e);
    this.tree.removeInstanceCache(instance);
    this.redirects.prune((_, r) => r.from !== instance && r.to !== instance);
    for (const [node, list] of this.replicas) {
      const kept = list.filter((r) => r.instance !== instance);
      if (kept.length === 0) this.replicas.delete(node);
      else this.replicas.set(node, kept);
    }
    this.queueTimes.forgetInstance(instance);
  }

  override tick(now: number): void {
    this.expireWindow(now);
    if (now - this.lastRebalance < this.options.rebalanceInterval) return;
    this.lastRebalance = now;
    this.pruneAdjustments(now);
    const loads = this.adjustedLoads(now);
    if (this.options.rebalance) this.rebalance(loads, now);
    if (this.options.prefixReplication) this.replicatePrefixes(loads, now);
  }

  // ---- routing ------------------------------------------------------------------------------

  /** The longest prefix cached on an active instance, and the active instances holding it. */
  private longestCachedAmongActive(
    match: ClusterMatch,
    active: readonly InstanceId[],
  ): { cached: number; holders: InstanceId[] } {
    let holders = match.bestInstances;
    for (const i of holders) {
      if (this.view.state(i)?.draining !== false) {
        holders = holders.filter((h) => this.view.state(h)?.draining === false);
        break;
      }
    }
    if (holders.length > 0 || match.bestCached === 0) return { cached: match.bestCached, holders };
    // Every instance with the deepest node is draining: fall back to the best active one.
    let cached = 0;
    for (const i of active) cached = Math.max(cached, this.tree.cachedOn(i));
    const best = cached === 0 ? [] : active.filter((i) => this.tree.cachedOn(i) === cached);
    return { cached, holders: best };
  }

  /**
   * The instances caching the key portion of the matched prefix (paper 3.2: "the GPU that caches the
   * tree node with the longest tokens in the matched prefix"; Appendix A: the deepest node with more
   * tokens than all its predecessors together), within the `cached` tokens some active instance
   * holds. Caching is prefix-closed, so an instance caches that node iff its cached length reaches the
   * node's end. Always a superset of the deepest node's holders.
   */
  private keyPortionHolders(match: ClusterMatch, cached: number, holders: InstanceId[]): InstanceId[] {
    let keyEnd = 0;
    for (const node of match.path) {
      if (node.prefixLen >= cached) break;
      const end = Math.min(node.endLen, cached);
      if (end - node.prefixLen > node.prefixLen) keyEnd = end;
    }
    if (keyEnd === 0 || keyEnd >= cached) return holders;
    const out = [...holders];
    for (const i of this.view.active)
      if (!out.includes(i) && this.tree.cachedOn(i) >= keyEnd && this.view.state(i)?.draining === false)
        out.push(i);
    return out;
  }

  /** Every active instance as an explore candidate; rebuilt only when the active set changes. */
  private exploreCandidates(active: readonly InstanceId[]): readonly Candidate[] {
    if (this.exploreFor !== active) {
      this.exploreFor = active;
      this.exploreList = active.map((instance) => ({ instance, via: 'explore' as E2Branch }));
    }
    return this.exploreList;
  }

  /** Instances caching the deepest matched node, with rebalancing redirects and prefix replicas applied. */
  private exploitCandidates(
    path: readonly ClusterNode[],
    holders: readonly InstanceId[],
    active: readonly InstanceId[],
  ): readonly Candidate[] {
    const out: Candidate[] = [];
    for (const h of holders) {
      const r = this.redirects.target(path, h);
      if (r !== undefined && this.view.state(r.to)?.draining === false)
        this.addCandidate(out, r.to, r.reason);
      else this.addCandidate(out, h, 'exploit');
    }
    if (this.replicas.size > 0) {
      for (let p = 0; p < path.length; p++) {
        const list = this.replicas.get(path[p]!);
        if (list === undefined) continue;
        const next = path[p + 1];
        for (const r of list)
          if (next === undefined || !r.stayed.has(next)) this.addCandidate(out, r.instance, 'replica');
      }
    }
    // Redirect targets might all be gone; never return an empty set.
    return out.length > 0 ? out : this.exploreCandidates(active);
  }

  private addCandidate(out: Candidate[], instance: InstanceId, via: E2Branch): void {
    if (this.view.state(instance)?.draining !== false) return;
    for (const c of out) if (c.instance === instance) return; // candidate lists are short
    out.push({ instance, via });
  }

  /** Cost L + M + P of each candidate; the lowest wins (ties: fewer in flight, then lower id). */
  private cheapest(
    candidates: readonly Candidate[],
    promptTokens: number,
    mark: number,
  ): RouteDecision<E2InstanceCost> {
    const costs: E2InstanceCost[] = [];
    let best: Candidate | undefined;
    let bestCost = Number.POSITIVE_INFINITY;
    let bestMatched = 0;
    for (const c of candidates) {
      const matched = this.tree.cachedOn(c.instance);
      const cost = this.costOf(c.instance, promptTokens, matched, mark);
      costs.push(cost);
      if (best === undefined || this.better(cost.total, c.instance, bestCost, best.instance)) {
        best = c;
        bestCost = cost.total;
        bestMatched = matched;
      }
    }
    return { instance: best!.instance, branch: best!.via, matchedTokens: bestMatched, costs };
  }

  private better(cost: number, instance: InstanceId, bestCost: number, bestInstance: InstanceId): boolean {
    const order = compareCost(cost, bestCost);
    if (order !== 0) return order < 0;
    const a = this.view.inflight(instance);
    const b = this.view.inflight(bestInstance);
    return a < b || (a === b && instance < bestInstance);
  }

  /** Algorithm 2: L (windowed load) + M (eviction cost) + P (this request's prefill). */
  costOf(instance: InstanceId, promptTokens: number, matched: number, mark: number): E2InstanceCost {
    const model = this.options.costModel;
    const load = this.loadOf(instance);
    const missed = promptTokens - matched;
    const prefill = model.prefillTime(missed, matched);
    const eviction = this.options.evictionCost ? this.evictionCostOf(instance, missed, mark) : 0;
    return { instance, total: load + eviction + prefill, load, eviction, prefill, matchedTokens: matched };
  }

  /** M: recomputation time of what LRU would evict for `newTokens`, weighted by each node's share of the window. */
  private evictionCostOf(instance: InstanceId, newTokens: number, mark: number): number {
    const requests = this.loads[instance]?.requests ?? 0;
    if (requests === 0) return 0;
    this.victimPricing.requests = requests;
    return this.tree.evictionCost(instance, newTokens, mark, this.victimPricing.price);
  }

  /**
   * Prefill/decode balancing: an explored request is prefill-heavy; the instance whose recent work
   * is most decode-heavy takes it, if that exceeds ImbalR and its load stays within the guard.
   */
  private preferDecodeHeavy(
    decision: RouteDecision<E2InstanceCost>,
    active: readonly InstanceId[],
  ): RouteDecision<E2InstanceCost> | undefined {
    const target = this.decodeHeavy(active);
    if (target < 0 || target === decision.instance) return undefined;
    const cheapest = decision.costs.find((c) => c.instance === decision.instance)!.total;
    const targetCost = decision.costs.find((c) => c.instance === target)!.total;
    if (targetCost > this.options.phaseMixLoadGuard * cheapest) return undefined;
    return {
      instance: target,
      branch: 'phase-mix',
      matchedTokens: this.tree.cachedOn(target),
      costs: decision.costs,
    };
  }

  /**
   * The decode-heavy instance phase-mix balancing sends explored requests to, or -1 when the instances
   * are "relatively balanced" (relative test) or none exceeds ImbalR (absolute test). Ties: lower id.
   */
  decodeHeavy(active: readonly InstanceId[]): InstanceId {
    let target = -1;
    let ratio = Number.NEGATIVE_INFINITY;
    let sum = 0;
    for (const i of active) {
      const r = this.decodeRatioOf(i);
      sum += r;
      if (r > ratio) {
        ratio = r;
        target = i;
      }
    }
    if (target < 0) return -1;
    if (this.options.phaseMixTest === 'absolute') return ratio > this.options.phaseMixRatio ? target : -1;
    if (active.length < 2) return -1;
    const othersMean = (sum - ratio) / (active.length - 1);
    return ratio > othersMean + this.options.phaseMixMargin ? target : -1;
  }

  /**
   * State kept per key portion (queueing times, redirects, replicas) follows the key portion when a
   * split turns the old node into a plain tail: the requests recorded there now have another key portion.
   */
  private keyPortionSplit(head: ClusterNode, tail: ClusterNode): void {
    // Redirects and replicas stay on the tail: they are about exactly that prefix, and moving them
    // up would widen them to unrelated branches. Queueing times were recorded for the original
    // node as a key portion: they follow the head when the head is now the key portion instead.
    const wasKeyPortion = head.length + tail.length > head.prefixLen;
    const stillKeyPortion = tail.length > tail.prefixLen;
    if (wasKeyPortion && !stillKeyPortion && head.length > head.prefixLen)
      this.queueTimes.transfer(tail, head);
  }

  private moveKeyPortionState(from: ClusterNode, to: ClusterNode): void {
    this.queueTimes.transfer(from, to);
    this.redirects.transfer(from, to);
    const replicas = this.replicas.get(from);
    if (replicas !== undefined) {
      this.replicas.delete(from);
      const merged = [...(this.replicas.get(to) ?? [])];
      for (const r of replicas) if (!merged.some((m) => m.instance === r.instance)) merged.push(r);
      this.replicas.set(to, merged);
    }
  }

  // ---- background work -------------------------------------------------------------------------

  /** Take a live entry out of the window's sums and tree counts ahead of its expiry (failure, removal). */
  private dropFromWindow(e: WindowEntry): void {
    e.live = false;
    if (e.expired) return;
    this.tree.releaseWindow(e.leaf, e.instance);
    this.windowRemove(e);
    if (e.outputTokens >= 0) {
      this.cluster.finished--;
      this.cluster.outputTokens -= e.outputTokens;
    }
  }

  private expireWindow(now: number): void {
    this.lastExpiry = now;
    this.window.expire(now, (e) => {
      e.expired = true;
      if (!e.live) return; // already taken out
      this.tree.releaseWindow(e.leaf, e.instance);
      this.windowRemove(e);
      if (e.outputTokens >= 0) {
        this.cluster.finished--;
        this.cluster.outputTokens -= e.outputTokens;
      }
    });
  }

  /** Windowed loads of active instances, with redirects' still-pending moves applied. */
  private adjustedLoads(now: number): Map<InstanceId, number> {
    const loads = new Map<InstanceId, number>();
    for (const i of this.view.active) loads.set(i, this.loadOf(i));
    const shift = new Map<InstanceId, number>();
    this.redirects.pendingShift(now, this.options.windowSeconds, shift);
    for (const [i, delta] of shift) if (loads.has(i)) loads.set(i, Math.max(0, loads.get(i)! + delta));
    return loads;
  }

  private rebalance(loads: Map<InstanceId, number>, now: number): void {
    // A rebalancing move stands only while its target is still the lighter of the two.
    this.redirects.prune(
      (_, r) => r.reason !== 'rebalance' || (loads.get(r.to) ?? 0) < (loads.get(r.from) ?? 0),
    );
    const heavies = this.possibleHeavies(loads);
    if (heavies.size === 0) return;
    const movable = this.movableLoads(heavies);
    const moves = planRebalance(loads, this.options.rebalanceThreshold, (heavy) => movable.get(heavy) ?? []);
    for (const m of moves) {
      this.redirects.add(m.node, { from: m.from, to: m.to, at: now, movedLoad: m.load, reason: 'rebalance' });
    }
  }

  /** Instances above Th_bal times the lightest load: only these can be the heavy side of a pair. */
  private possibleHeavies(loads: ReadonlyMap<InstanceId, number>): Set<InstanceId> {
    let min = Number.POSITIVE_INFINITY;
    for (const l of loads.values()) if (l < min) min = l;
    const heavies = new Set<InstanceId>();
    for (const [i, l] of loads) if (l > 0 && l > this.options.rebalanceThreshold * min) heavies.add(i);
    return heavies;
  }

  /**
   * The heavy instances' key portions shared by at least two of their requests in the window, with
   * the load those requests put there: read from the per-leaf sums of the heavy instances only.
   */
  private movableLoads(heavies: ReadonlySet<InstanceId>): Map<InstanceId, MovableLoad[]> {
    const out = new Map<InstanceId, MovableLoad[]>();
    for (const [instance, nodes] of this.keyPortionLoads(heavies)) {
      const list: MovableLoad[] = [];
      for (const [node, agg] of nodes) if (agg.count >= 2) list.push({ node, load: agg.load });
      out.set(instance, list);
    }
    return out;
  }

  /** Windowed load and request count per movable key portion (cached there, not redirected) of each instance. */
  private keyPortionLoads(
    instances: Iterable<InstanceId>,
  ): Map<InstanceId, Map<ClusterNode, { load: number; count: number }>> {
    const byInstance = new Map<InstanceId, Map<ClusterNode, { load: number; count: number }>>();
    for (const instance of instances) {
      const leaves = this.leafLoads[instance];
      if (leaves === undefined || leaves.size === 0) continue;
      let decode = -1;
      let nodes: Map<ClusterNode, { load: number; count: number }> | undefined;
      for (const [leaf, sums] of leaves) {
        const kp = keyPortionOf(leaf);
        if (kp === null || this.redirects.has(kp, instance) || !this.tree.isCached(kp, instance)) continue;
        if (decode < 0) decode = this.estimator.decodeSeconds(this.loadFor(instance), this.cluster);
        if (nodes === undefined) {
          nodes = new Map();
          byInstance.set(instance, nodes);
        }
        const agg = nodes.get(kp) ?? { load: 0, count: 0 };
        agg.load += sums.prefillSeconds + sums.count * decode;
        agg.count += sums.count;
        nodes.set(kp, agg);
      }
    }
    return byInstance;
  }

  /** A live entry enters the window's sums (routing, or its corrected re-entry at finish). */
  private windowAdd(e: WindowEntry): void {
    this.loadFor(e.instance).add(e);
    if (e.leaf === null) return;
    let leaves = this.leafLoads[e.instance];
    if (leaves === undefined) {
      leaves = new Map();
      this.leafLoads[e.instance] = leaves;
    }
    const sums = leaves.get(e.leaf);
    if (sums === undefined) leaves.set(e.leaf, { prefillSeconds: e.prefillSeconds, count: 1 });
    else {
      sums.prefillSeconds += e.prefillSeconds;
      sums.count++;
    }
  }

  /** A live entry leaves the window's sums (expiry, failure, removal, or before its correction). */
  private windowRemove(e: WindowEntry): void {
    this.loadFor(e.instance).remove(e);
    if (e.leaf === null) return;
    const leaves = this.leafLoads[e.instance];
    const sums = leaves?.get(e.leaf);
    if (leaves === undefined || sums === undefined)
      throw new Error('e2: window entry missing from its leaf sums');
    sums.count--;
    if (sums.count === 0) leaves.delete(e.leaf);
    else sums.prefillSeconds = Math.max(0, sums.prefillSeconds - e.prefillSeconds);
  }

  /**
   * Check the incremental state against a full recomputation over the window (tests): the per-leaf
   * sums, and the key-portion loads that rebalancing reads from them, as the old window scan made them.
   */
  checkIncrementalState(): void {
    const close = (a: number, b: number) => Math.abs(a - b) <= 1e-9 * Math.max(1, Math.abs(a), Math.abs(b));
    const fresh = new Map<InstanceId, Map<ClusterNode, LeafLoad>>();
    for (const e of this.window.entries()) {
      if (!e.live || e.leaf === null) continue;
      let leaves = fresh.get(e.instance);
      if (leaves === undefined) {
        leaves = new Map();
        fresh.set(e.instance, leaves);
      }
      const sums = leaves.get(e.leaf) ?? { prefillSeconds: 0, count: 0 };
      sums.prefillSeconds += e.prefillSeconds;
      sums.count++;
      leaves.set(e.leaf, sums);
    }
    const instances = new Set<InstanceId>(fresh.keys());
    this.leafLoads.forEach((m, i) => {
      if (m !== undefined && m.size > 0) instances.add(i);
    });
    for (const i of instances) {
      const want = fresh.get(i) ?? new Map<ClusterNode, LeafLoad>();
      const have = this.leafLoads[i] ?? new Map<ClusterNode, LeafLoad>();
      if (want.size !== have.size)
        throw new Error(`e2: instance ${i} has ${have.size} leaf sums, the window ${want.size}`);
      for (const [leaf, w] of want) {
        const h = have.get(leaf);
        if (h === undefined || h.count !== w.count || !close(h.prefillSeconds, w.prefillSeconds))
          throw new Error(`e2: leaf sums of instance ${i} differ from the window`);
      }
    }
    // The old window scan, for the key-portion loads.
    const scan = new Map<InstanceId, Map<ClusterNode, { load: number; count: number }>>();
    for (const e of this.window.entries()) {
      if (!e.live) continue;
      const kp = keyPortionOf(e.leaf);
      if (kp === null || this.redirects.has(kp, e.instance) || !this.tree.isCached(kp, e.instance)) continue;
      const d = this.estimator.decodeSeconds(this.loadFor(e.instance), this.cluster);
      let nodes = scan.get(e.instance);
      if (nodes === undefined) {
        nodes = new Map();
        scan.set(e.instance, nodes);
      }
      const agg = nodes.get(kp) ?? { load: 0, count: 0 };
      agg.load += e.prefillSeconds + d;
      agg.count++;
      nodes.set(kp, agg);
    }
    const incremental = this.keyPortionLoads(instances);
    for (const i of instances) {
      const want = scan.get(i) ?? new Map();
      const have = incremental.get(i) ?? new Map();
      if (want.size !== have.size)
        throw new Error(`e2: instance ${i} key portions differ from the window scan`);
      for (const [kp, w] of want) {
        const h = have.get(kp);
        if (h === undefined || h.count !== w.count || !close(h.load, w.load))
          throw new Error(`e2: key-portion load of instance ${i} differs from the window scan`);
      }
    }
  }

  /** Replicate prefixes whose queueing time doubled onto the lightest other instance, splitting their subtree by load. */
  private replicatePrefixes(loads: Map<InstanceId, number>, now: number): void {
    for (const t of this.queueTimes.takeTriggers(now)) {
      if (!loads.has(t.instance) || t.node.parent === null) continue;
      const existing = this.replicas.get(t.node) ?? [];
      let target = -1;
      for (const [i, l] of loads) {
        if (i === t.instance || existing.some((r) => r.instance === i) || this.tree.isCached(t.node, i))
          continue;
        if (target < 0 || l < loads.get(target)!) target = i;
      }
      if (target < 0) continue;
      const children = this.childLoads(t.node, t.instance);
      const moved = new Set(splitSubtreeByLoad(children));
      const stayed = new Set(children.filter((c) => !moved.has(c.node)).map((c) => c.node));
      this.replicas.set(t.node, [...existing, { instance: target, at: now, stayed }]);
      for (const c of children) {
        if (!moved.has(c.node)) continue;
        this.redirects.add(c.node, {
          from: t.instance,
          to: target,
          at: now,
          movedLoad: c.load,
          reason: 'replica',
        });
      }
    }
  }

  /**
   * Algorithm 2 load (prefill of missed tokens + decode) that each child subtree of `node` put on
   * `instance` in the window, from the instance's per-leaf sums (run only when prefix replication fires).
   */
  private childLoads(node: ClusterNode, instance: InstanceId): { node: ClusterNode; load: number }[] {
    const decode = this.estimator.decodeSeconds(this.loadFor(instance), this.cluster);
    const byChild = new Map<ClusterNode, number>();
    for (const [leaf, sums] of this.leafLoads[instance] ?? []) {
      let child: ClusterNode | null = leaf;
      while (child !== null && child.parent !== node) child = child.parent;
      if (child === null) continue;
      byChild.set(child, (byChild.get(child) ?? 0) + sums.prefillSeconds + sums.count * decode);
    }
    return [...byChild].map(([c, load]) => ({ node: c, load }));
  }

  /**
   * Redirects and replicas last one window at most (by then the window reflects where the traffic
   * went), while their prefix still sees requests, and only between instances that are still there.
   */
  private pruneAdjustments(now: number): void {
    const horizon = this.options.windowSeconds;
    const present = (i: InstanceId) => this.view.state(i)?.draining === false;
    this.redirects.prune(
      (node, r) =>
        now - r.at < horizon && node.data.windowTotal > 0 && this.view.has(r.from) && present(r.to),
    );
    for (const [node, list] of this.replicas) {
      const kept = list.filter(
        (r) => now - r.at < horizon && node.data.windowTotal > 0 && present(r.instance),
      );
      if (kept.length === 0) this.replicas.delete(node);
      else if (kept.length !== list.length) this.replicas.set(node, kept);
    }
  }

  private loadFor(instance: InstanceId): InstanceLoad {
    let load = this.loads[instance];
    if (load === undefined) {
      load = new InstanceLoad();
      this.loads[instance] = load;
    }
    return load;
  }
}
