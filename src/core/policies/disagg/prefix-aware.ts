import { ClusterTree } from '../../cluster-tree.ts';
import { NoInstanceAvailableError } from '../../cluster-view.ts';
import type { CostModel } from '../../cost-model/types.ts';
import type {
  FinishCounts,
  GlobalPolicy,
  InstanceCost,
  InstanceId,
  InstanceInfo,
  InstanceLoadSignal,
  Role,
  RouteDecision,
  RouteRequest,
  Tokens,
} from '../../types.ts';
import { DecodeAtKvReadyPolicy } from '../support/decode-at-kv-ready.ts';
import { indexAfter } from '../support/index-after.ts';

export interface PrefixPdOptions {
  /** The colocated policy (registry name) that places prefills among the prefill and mixed instances. */
  readonly prefillPolicy?: string;
  /**
   * Disaggregate a request when its uncached prefill (the prompt less its longest prefix cached on an
   * active prefill-capable instance) takes longer than this, alone, by the cost model. Default 0.1 s, the TPOT
   * SLO of DistServe's chatbot workload (Table 1): a colocated prefill runs inside the co-running
   * decodes' iterations, so one that takes less than a TPOT budget delays their next token by less
   * than one token's budget, and one that takes more breaks it; that is the interference
   * disaggregation removes.
   */
  readonly colocatedPrefillSeconds?: number;
  /**
   * Bytes per second assumed between a prefill and a decode instance when pricing a KV transfer: the
   * policy is not told the fleet's links. Default 25 GB/s: the fleet's default network (InfiniBand
   * 200 Gbps) and a PCIe Gen4 host link (docs/fleets.md); NVLink is faster, Ethernet slower.
   */
  readonly linkBandwidth?: number;
  /**
   * A long uncached prefill runs colocated on a mixed instance anyway (branch `prefill-overflow`) when
   * the shortest prefill-instance queue (uncached prompt tokens routed there whose prefill has not
   * ended, with this request's) would pass this: Splitwise's mixed-pool overflow. Default 8,192, our
   * splitwise's `promptQueueTokens` (4 batches of its 2,048-token cap; Splitwise gives no value).
   */
  readonly prefillQueueTokens?: number;
  /** Expected output tokens of a request without a max_tokens hint (Splitwise's conversation median: 129). */
  readonly defaultOutputTokens?: number;
}

export const prefixPdDefaults: Required<PrefixPdOptions> = {
  prefillPolicy: 'e2',
  colocatedPrefillSeconds: 0.1,
  linkBandwidth: 25e9,
  prefillQueueTokens: 8192,
  defaultOutputTokens: 129,
};

/** One decode candidate as the policy priced it (seconds). */
export interface PrefixPdDecodeCost extends InstanceCost {
  /** Time to move the KV the candidate does not cache over `linkBandwidth`. */
  readonly transfer: number;
  /** The request's expected decode time in the candidate's batch (its in-flight requests plus it). */
  readonly decode: number;
}

/** A request between its route and its release. */
interface Pending {
  /** Uncached prompt tokens counted in its prefill instance's queue until its prefill ends (then 0). */
  queued: number;
  readonly tokens: Tokens;
  readonly outputTokens: number;
  /** The inner policy still counts it (on its prefill or mixed instance). */
  innerOpen: boolean;
  readonly matchedTokens: number;
  /** Leaf of its prompt in the tree on the instance that pins it (the decode instance once moved). */
  leaf: ReturnType<ClusterTree['assign']>;
  pinnedOn: InstanceId;
  /** KV tokens counted on its decode instance (0 until moved there). */
  kvOnDecode: number;
}

const isPrefillCapable = (role: Role | undefined) => role !== 'decode';

/**
 * Prefix-aware prefill/decode disaggregation (Preble issue 10, item 9). None of DistServe or Splitwise
 * models prefix caching; this policy does, in three places:
 * - **Prefill**: any registered colocated policy (`prefillPolicy`, E2 by default) places the prefill.
 *   It is a whole policy of its own that is told only of the prefill-capable instances (prefill and
 *   mixed roles) and gets their feedback (start, first token, evictions, load signals, ticks); the
 *   prefill leg ends for it when the KV has left the prefill instance (`kvArrived`, reported as a
 *   finish with one output token), so its prefix tree and load stay those of its instances.
 * - **Decider**: the uncached prefill is the prompt less its longest prefix cached on an active
 *   prefill-capable instance (this policy's own cluster tree). If its prefill time alone exceeds
 *   `colocatedPrefillSeconds`, the request is disaggregated (the inner policy picks among the prefill
 *   instances), unless the shortest prefill queue would pass `prefillQueueTokens` (then it overflows to
 *   the mixed instances, as in Splitwise); otherwise it runs colocated (no `decode`) on a mixed instance
 *   the inner policy picks (which then caches the prefix for the next ones).
 *   A fleet without mixed instances disaggregates everything (our engines run no whole request on a
 *   prefill-role instance); without prefill instances everything is colocated; a fleet with no roles at
 *   all is the inner policy alone (same instances, branch `colocated`).
 * - **Decode** (`decode: 'at-kv-ready'`): among the active decode instances (mixed ones if none), the
 *   least of transfer + decode, where transfer = the KV tokens the candidate does not cache (the
 *   cluster tree) x kvBytesPerToken / `linkBandwidth` (the simulator moves exactly that part), and
 *   decode = the expected output tokens x the cost model's iteration time for the candidate's batch
 *   with this request in it (its in-flight requests, one new token each, over their KV). Ties rotate.
 * The cluster tree is cache-aware's kind: a prompt is marked cached where it is routed (its prefill or
 * colocated instance, then its decode instance), pinned while in flight, forgotten in LRU order past
 * the instance's KV capacity and where the engines report evictions.
 */
export class PrefixAwarePdPolicy extends DecodeAtKvReadyPolicy<InstanceCost> {
  readonly name = 'prefix-pd';
  readonly branches = ['colocated', 'disaggregated', 'prefill-overflow'] as const;
  readonly tree = new ClusterTree();
  private readonly options: Required<PrefixPdOptions>;
  private readonly costModel: CostModel;
  private readonly inner: GlobalPolicy;
  /** Instances the inner policy was told of (prefill-capable). */
  private readonly innerKnows = new Set<InstanceId>();
  private readonly pending = new Map<string, Pending>();
  /** Per instance: KV tokens of the requests decoding there (moved by this policy). */
  private readonly decodeKv: number[] = [];
  /** Per instance: uncached prompt tokens routed there whose prefill has not ended (router's count). */
  private readonly promptQueue: number[] = [];
  private lastDecode: InstanceId = -1;
  /** Costs of the last decode choice (tests, explanations). */
  lastDecodeCosts: readonly PrefixPdDecodeCost[] = [];

  constructor(options: PrefixPdOptions & { costModel: CostModel; inner: GlobalPolicy }) {
    super();
    const { costModel, inner, ...rest } = options;
    this.options = { ...prefixPdDefaults, ...rest };
    this.costModel = costModel;
    this.inner = inner;
  }

  protected choose(request: RouteRequest, now: number, active: readonly InstanceId[]): RouteDecision {
    const prefill = active.filter((id) => this.role(id) === 'prefill');
    const mixed = active.filter((id) => this.role(id) === 'mixed');
    if (prefill.length === 0 && mixed.length === 0) throw new NoInstanceAvailableError();
    let branch: 'colocated' | 'disaggregated' | 'prefill-overflow' = 'colocated';
    if (prefill.length > 0) {
      const uncached = mixed.length === 0 ? 0 : this.uncachedTokens(request.tokens, active);
      if (mixed.length === 0) branch = 'disaggregated';
      else if (
        this.costModel.prefillTime(uncached, request.tokens.length - uncached) >
        this.options.colocatedPrefillSeconds
      )
        branch =
          Math.min(...prefill.map((id) => this.promptQueue[id] ?? 0)) + uncached >
          this.options.prefillQueueTokens
            ? 'prefill-overflow'
            : 'disaggregated';
    }
    const pool = branch === 'disaggregated' ? prefill : mixed;
    const avoid = [...this.innerKnows].filter((id) => !pool.includes(id));
    const inner = this.inner.route(
      avoid.length === 0 ? request : { ...request, avoid: [...(request.avoid ?? []), ...avoid] },
      now,
    );
    const base = { instance: inner.instance, branch, matchedTokens: inner.matchedTokens, costs: inner.costs };
    return branch === 'disaggregated' ? { ...base, decode: 'at-kv-ready' } : base;
  }

  /** The decider's measure: the prompt less its longest prefix cached on an active prefill-capable instance. */
  private uncachedTokens(tokens: Tokens, active: readonly InstanceId[]): number {
    this.tree.match(tokens);
    let cached = 0;
    for (const id of active)
      if (this.role(id) !== 'decode') cached = Math.max(cached, this.tree.cachedOn(id));
    return tokens.length - cached;
  }

  protected override onRouted(request: RouteRequest, decision: RouteDecision, now: number): void {
    const leaf = this.tree.assign(request.tokens, decision.instance, now, false);
    this.tree.evictToCapacity(decision.instance);
    const queued = Math.max(0, request.tokens.length - decision.matchedTokens);
    this.promptQueue[decision.instance] = (this.promptQueue[decision.instance] ?? 0) + queued;
    this.pending.set(request.id, {
      queued,
      tokens: request.tokens,
      outputTokens: Math.max(1, request.outputLenHint ?? this.options.defaultOutputTokens),
      innerOpen: true,
      matchedTokens: decision.matchedTokens,
      leaf,
      pinnedOn: decision.instance,
      kvOnDecode: 0,
    });
  }

  protected chooseDecode(
    id: string,
    _prefillInstance: InstanceId,
    kvTokens: number,
    now: number,
  ): InstanceId {
    const active = this.view.active;
    let pool = active.filter((i) => this.role(i) === 'decode');
    if (pool.length === 0) pool = active.filter((i) => this.role(i) === 'mixed');
    if (pool.length === 0) throw new NoInstanceAvailableError();
    const p = this.pending.get(id);
    const outputTokens = p?.outputTokens ?? this.options.defaultOutputTokens;
    if (p !== undefined) this.tree.match(p.tokens);
    const costs: PrefixPdDecodeCost[] = [];
    const start = indexAfter(pool, this.lastDecode);
    let best: PrefixPdDecodeCost | undefined;
    for (let k = 0; k < pool.length; k++) {
      const instance = pool[(start + k) % pool.length]!;
      const matchedTokens = p === undefined ? 0 : Math.min(kvTokens, this.tree.cachedOn(instance));
      const transfer =
        ((kvTokens - matchedTokens) * this.costModel.kvBytesPerToken) / this.options.linkBandwidth;
      const n = this.view.inflight(instance) + 1;
      const seqTokens = (this.decodeKv[instance] ?? 0) + kvTokens + n;
      const step = this.costModel.iterationTime({
        requests: n,
        newTokens: n,
        seqTokens,
        newTimesSeq: seqTokens,
      });
      const decode = outputTokens * step;
      const cost = { instance, total: transfer + decode, matchedTokens, transfer, decode };
      costs.push(cost);
      if (best === undefined || cost.total < best.total) best = cost;
    }
    this.lastDecodeCosts = costs;
    const decode = best!.instance;
    this.lastDecode = decode;
    this.moveRequest(id, decode, now);
    if (p !== undefined) {
      this.prefillEnded(p);
      this.tree.releaseInflight(p.leaf, p.pinnedOn);
      p.leaf = this.tree.assign(p.tokens, decode, now, false);
      p.pinnedOn = decode;
      p.kvOnDecode = kvTokens;
      this.decodeKv[decode] = (this.decodeKv[decode] ?? 0) + kvTokens;
      this.tree.evictToCapacity(decode);
    }
    return decode;
  }

  kvReady(_id: string, _prefillInstance: InstanceId, _path: Tokens, _now: number): void {}

  /** The prefill instance let the KV go: the prefill leg ends for the inner policy. */
  kvArrived(id: string, _decodeInstance: InstanceId, _path: Tokens, now: number): void {
    const p = this.pending.get(id);
    if (p === undefined || !p.innerOpen) return;
    p.innerOpen = false;
    this.inner.requestFinished(id, now, {
      promptTokens: p.tokens.length,
      cachedTokens: Math.min(p.matchedTokens, p.tokens.length),
      outputTokens: 1,
    });
  }

  override requestStarted(id: string, now: number): void {
    if (this.pending.get(id)?.innerOpen === true) this.inner.requestStarted(id, now);
  }

  override requestFirstToken(id: string, now: number): void {
    const p = this.pending.get(id);
    if (p === undefined) return;
    this.prefillEnded(p);
    if (p.innerOpen) this.inner.requestFirstToken(id, now);
  }

  /** Queued prompt tokens of an instance, as the router counts them (tests, metrics). */
  promptQueueTokens(instance: InstanceId): number {
    return this.promptQueue[instance] ?? 0;
  }

  private prefillEnded(p: Pending): void {
    if (p.queued === 0) return;
    this.promptQueue[p.pinnedOn] = (this.promptQueue[p.pinnedOn] ?? 0) - p.queued;
    p.queued = 0;
  }

  protected override onReleased(
    id: string,
    instance: InstanceId,
    now: number,
    counts: FinishCounts | undefined,
  ): void {
    const p = this.pending.get(id);
    if (p === undefined) return;
    this.pending.delete(id);
    this.prefillEnded(p);
    this.tree.releaseInflight(p.leaf, p.pinnedOn);
    if (p.kvOnDecode > 0) this.decodeKv[instance] = (this.decodeKv[instance] ?? 0) - p.kvOnDecode;
    if (!p.innerOpen) return;
    if (counts === undefined) this.inner.requestFailed(id, now);
    else this.inner.requestFinished(id, now, counts);
  }

  override instanceAdded(instance: InstanceId, info: InstanceInfo, now: number): void {
    super.instanceAdded(instance, info, now);
    this.tree.addInstance(instance, info.kvCapacityTokens, info.exclusivePrefixes === true);
    if (isPrefillCapable(info.role)) {
      this.innerKnows.add(instance);
      this.inner.instanceAdded(instance, info, now);
    }
  }

  override instanceDrained(instance: InstanceId, now: number): void {
    super.instanceDrained(instance, now);
    if (this.innerKnows.has(instance)) this.inner.instanceDrained(instance, now);
  }

  /**
   * A role change moves the instance in or out of the inner policy's pool: turned prefill-capable it
   * is (re)added there (a known id keeps its cache and counts), turned decode it is drained there, so
   * the inner policy routes no prefill to it but still releases what it had in flight.
   */
  override instanceRoleChanged(instance: InstanceId, role: Role, now: number): void {
    super.instanceRoleChanged(instance, role, now);
    const state = this.view.state(instance);
    if (state === undefined || state.removed) return;
    if (isPrefillCapable(role)) {
      if (state.draining) return;
      this.innerKnows.add(instance);
      this.inner.instanceAdded(instance, state.info, now);
    } else if (this.innerKnows.has(instance)) {
      this.inner.instanceDrained(instance, now);
    }
  }

  override instanceRemoved(instance: InstanceId, now: number): void {
    super.instanceRemoved(instance, now);
    this.tree.removeInstanceCache(instance);
    if (this.innerKnows.has(instance)) {
      this.innerKnows.delete(instance);
      this.inner.instanceRemoved(instance, now);
    }
  }

  override instanceEvicted(
    instance: InstanceId,
    path: Tokens,
    keptTokens: number,
    now: number,
    evictedAt = now,
  ): void {
    this.tree.evictReported(instance, path, keptTokens, evictedAt);
    if (this.innerKnows.has(instance)) this.inner.instanceEvicted(instance, path, keptTokens, now, evictedAt);
  }

  override loadSignal(instance: InstanceId, signal: InstanceLoadSignal, now: number): void {
    super.loadSignal(instance, signal, now);
    if (this.innerKnows.has(instance)) this.inner.loadSignal(instance, signal, now);
  }

  override tick(now: number): void {
    this.inner.tick(now);
  }

  /** The instances the inner policy was told of (tests). */
  innerInstances(): InstanceId[] {
    return [...this.innerKnows].sort((a, b) => a - b);
  }

  private role(id: InstanceId): Role {
    return this.view.state(id)?.info.role ?? 'mixed';
  }
}
