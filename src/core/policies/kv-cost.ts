import { type ClusterNode, ClusterTree } from '../cluster-tree.ts';
import { Random } from '../random.ts';
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
import { PerInstanceNumbers } from './support/per-instance-numbers.ts';
import { softmaxPickLowest } from './support/softmax-pick.ts';

export interface KvCostOptions {
  /** Tokens per KV block; must match the engine's. Default 16, vLLM's default block size. */
  readonly blockSize?: number;
  /** Weight of the prefill term against the decode term (Dynamo's prefill_load_scale). Default 1. */
  readonly prefillLoadScale?: number;
  /** Blocks of credit per cached block (Dynamo's device-tier overlap credit). Default 1. */
  readonly overlapCredit?: number;
  /** 0 (default): lowest cost wins. Above 0: softmax sampling over costs normalised to [0, 1]. */
  readonly temperature?: number;
  /** Equal lowest costs at temperature 0: a seeded 'random' pick (default, as Dynamo) or the 'lowest-id'. */
  readonly tieBreak?: 'random' | 'lowest-id';
  /** Seed of tie-breaks and softmax sampling. Default 0. */
  readonly seed?: number;
  /** Predicted-cache capacity for an instance whose KV capacity is unknown (Infinity). Default 2^22 tokens. */
  readonly unknownCapacityTokens?: number;
}

export const kvCostDefaults: Required<KvCostOptions> = {
  blockSize: 16,
  prefillLoadScale: 1,
  overlapCredit: 1,
  temperature: 0,
  tieBreak: 'random',
  seed: 0,
  unknownCapacityTokens: 2 ** 22,
};

/** An instance's cost: its prefill blocks (after the overlap credit) and decode blocks. */
export interface KvCostCost extends InstanceCost {
  readonly prefill: number;
  readonly load: number;
}

interface ActiveRequest {
  readonly instance: InstanceId;
  /** The instance's incarnation when routed: a removed and re-added id starts from zero. */
  readonly generation: number;
  /** Prompt blocks it must compute (prompt blocks minus cached ones), until its first token. */
  readonly prefillBlocks: number;
  /** Blocks it holds while in flight (its prompt blocks). */
  readonly decodeBlocks: number;
  readonly leaf: ClusterNode | null;
  prefilling: boolean;
}

/**
 * NVIDIA Dynamo's KV router cost (router-concepts.md), in its approximate mode: the router predicts
 * each instance's cache from its own routing decisions (a ClusterTree with the instance's KV
 * capacity and LRU eviction, corrected by eviction reports) and its load from the requests it sent:
 *
 *   overlap  = floor(cached prompt tokens / blockSize) x overlapCredit
 *   cost     = prefillLoadScale x max(activePrefill + incoming - overlap, 0) + (activeDecode + incoming)
 *
 * incoming = ceil(prompt / blockSize); activePrefill = uncached prompt blocks of requests that have
 * not produced a first token; activeDecode = prompt blocks of all in-flight requests (Dynamo counts
 * unique blocks; shared prefixes are counted per request here). Lowest cost wins. Branch
 * 'cache-hit' when the chosen instance has a cached block of this prompt, else 'load'.
 */
export class KvCostPolicy extends BasePolicy<KvCostCost> {
  readonly name = 'kv-cost';
  readonly branches = ['cache-hit', 'load'] as const;
  private readonly options: Required<KvCostOptions>;
  private readonly random: Random;
  /** Exposed for tests and explanations; it must not be modified from outside. */
  readonly tree = new ClusterTree();
  private readonly activePrefill = new PerInstanceNumbers();
  private readonly activeDecode = new PerInstanceNumbers();
  /** Bumped when an instance is removed, so requests it still had cannot touch a re-added namesake. */
  private readonly generation = new PerInstanceNumbers();
  private readonly requests = new Map<string, ActiveRequest>();
  /** Costs of the current decision, indexed like the active list (reused: no allocation per decision). */
  private totals = new Float64Array(16);
  /** The chosen instance's numbers, handed from choose to onRouted. */
  private chosenPrefillBlocks = 0;
  private chosenDecodeBlocks = 0;

  constructor(options: KvCostOptions = {}) {
    super();
    this.options = withDefaults(kvCostDefaults, options);
    const o = this.options;
    if (!(Number.isInteger(o.blockSize) && o.blockSize > 0)) {
      throw new Error(`kv-cost: blockSize must be a positive integer, got ${o.blockSize}`);
    }
    if (!(o.prefillLoadScale >= 0))
      throw new Error(`kv-cost: prefillLoadScale must be >= 0, got ${o.prefillLoadScale}`);
    if (!(o.overlapCredit >= 0))
      throw new Error(`kv-cost: overlapCredit must be >= 0, got ${o.overlapCredit}`);
    if (!(o.temperature >= 0)) throw new Error(`kv-cost: temperature must be >= 0, got ${o.temperature}`);
    if (o.tieBreak !== 'random' && o.tieBreak !== 'lowest-id') {
      throw new Error(`kv-cost: tieBreak must be 'random' or 'lowest-id', got ${String(o.tieBreak)}`);
    }
    if (!(o.unknownCapacityTokens > 0)) {
      throw new Error(`kv-cost: unknownCapacityTokens must be > 0, got ${o.unknownCapacityTokens}`);
    }
    this.random = new Random(o.seed);
  }

  /** Router-predicted active prefill and decode blocks of an instance (tests, metrics). */
  activeBlocks(instance: InstanceId): { prefill: number; decode: number } {
    return { prefill: this.activePrefill.get(instance), decode: this.activeDecode.get(instance) };
  }

  protected choose(
    request: RouteRequest,
    _now: number,
    active: readonly InstanceId[],
  ): RouteDecision<KvCostCost> {
    const o = this.options;
    const n = active.length;
    const incoming = Math.ceil(request.tokens.length / o.blockSize);
    this.tree.match(request.tokens);
    if (this.totals.length < n) this.totals = new Float64Array(Math.max(n, this.totals.length * 2));
    const totals = this.totals;
    const costs: KvCostCost[] = new Array(n);
    let best = 0;
    let ties = 0;
    for (let k = 0; k < n; k++) {
      const id = active[k]!;
      const overlap = Math.floor(this.tree.cachedOn(id) / o.blockSize);
      const prefill = Math.max(this.activePrefill.get(id) + incoming - overlap * o.overlapCredit, 0);
      const decode = this.activeDecode.get(id) + incoming;
      const cost = o.prefillLoadScale * prefill + decode;
      totals[k] = cost;
      costs[k] = { instance: id, total: cost, prefill, load: decode, matchedTokens: overlap * o.blockSize };
      if (k === 0 || cost < totals[best]!) {
        best = k;
        ties = 1;
      } else if (cost === totals[best]) {
        ties++;
      }
    }
    if (o.temperature > 0) best = softmaxPickLowest(totals, n, o.temperature, this.random);
    else if (ties > 1 && o.tieBreak === 'random') best = this.pickTie(n, totals[best]!, ties);

    const matchedTokens = costs[best]!.matchedTokens ?? 0;
    const overlap = matchedTokens / o.blockSize;
    this.chosenPrefillBlocks = Math.max(incoming - overlap, 0);
    this.chosenDecodeBlocks = incoming;
    return { instance: active[best]!, branch: overlap > 0 ? 'cache-hit' : 'load', matchedTokens, costs };
  }

  override requestFirstToken(id: string, now: number): void {
    super.requestFirstToken(id, now);
    const r = this.requests.get(id);
    if (r === undefined || !r.prefilling) return;
    r.prefilling = false;
    if (this.isCurrent(r)) this.activePrefill.add(r.instance, -r.prefillBlocks);
  }

  override instanceAdded(instance: InstanceId, info: InstanceInfo, now: number): void {
    super.instanceAdded(instance, info, now);
    const capacity = Number.isFinite(info.kvCapacityTokens)
      ? info.kvCapacityTokens
      : this.options.unknownCapacityTokens;
    if (!this.tree.hasInstance(instance)) {
      this.activePrefill.set(instance, 0);
      this.activeDecode.set(instance, 0);
    }
    this.tree.addInstance(instance, capacity);
    this.tree.evictToCapacity(instance);
  }

  override instanceRemoved(instance: InstanceId, now: number): void {
    super.instanceRemoved(instance, now);
    this.tree.deleteInstance(instance);
    this.generation.add(instance, 1);
    this.activePrefill.set(instance, 0);
    this.activeDecode.set(instance, 0);
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

  protected override onRouted(request: RouteRequest, decision: RouteDecision<KvCostCost>, now: number): void {
    const instance = decision.instance;
    // Pinned until it ends: an engine never evicts the blocks of a running request.
    const leaf = this.tree.assign(request.tokens, instance, now, false);
    this.tree.evictToCapacity(instance);
    this.requests.set(request.id, {
      instance,
      generation: this.generation.get(instance),
      prefillBlocks: this.chosenPrefillBlocks,
      decodeBlocks: this.chosenDecodeBlocks,
      leaf,
      prefilling: true,
    });
    this.activePrefill.add(instance, this.chosenPrefillBlocks);
    this.activeDecode.add(instance, this.chosenDecodeBlocks);
  }

  protected override onReleased(id: string): void {
    const r = this.requests.get(id);
    if (r === undefined) return;
    this.requests.delete(id);
    this.tree.releaseInflight(r.leaf, r.instance);
    if (!this.isCurrent(r)) return;
    if (r.prefilling) this.activePrefill.add(r.instance, -r.prefillBlocks);
    this.activeDecode.add(r.instance, -r.decodeBlocks);
    this.tree.evictToCapacity(r.instance);
  }

  private isCurrent(r: ActiveRequest): boolean {
    return this.view.has(r.instance) && this.generation.get(r.instance) === r.generation;
  }

  /** A seeded uniform pick among the `ties` instances whose total equals `cost`. */
  private pickTie(n: number, cost: number, ties: number): number {
    let skip = this.random.int(0, ties - 1);
    for (let k = 0; k < n; k++) {
      if (this.totals[k] === cost && skip-- === 0) return k;
    }
    return 0;
  }
}
